"""The run matrix: agents x tasks x variants x repetitions, with stable derived ids."""

from __future__ import annotations

from dataclasses import dataclass

from assay.records.trial_id import parse_trial_id as split_trial_id
from assay.records.trial_id import trial_id
from assay.spec.load import LoadedSuite


@dataclass(frozen=True, order=True)
class PlannedTrial:
    """One cell of the matrix. Its id is derived, never random, so a resumed run finds it."""

    task_id: str
    variant: str
    agent: str
    repetition: int

    @property
    def id(self) -> str:
        return trial_id(self.task_id, self.variant, self.agent, self.repetition)


def parse_trial_id(tid: str) -> PlannedTrial:
    """The planned trial an id names (the one parser: :func:`assay.records.trial_id.parse_trial_id`)."""
    return PlannedTrial(*split_trial_id(tid))


def build_plan(suite: LoadedSuite, agents: list[str], *, repeat: int = 1, variants: str = "all",
               tasks: list[str] | None = None) -> list[PlannedTrial]:
    """The planned trials in a stable order (agent, task, variant, repetition)."""
    out = []
    for agent in agents:
        for task in suite.tasks:
            if tasks is not None and task.id not in tasks:
                continue
            vids = task.spec.variant_ids() if variants == "all" else ["base"]
            for v in vids:
                for rep in range(1, repeat + 1):
                    out.append(PlannedTrial(task.id, v, agent, rep))
    return out
