"""A trial's id, ``task.variant.agent.rN``: derived by the plan, never random (so a resumed run
finds its trials), and read back by the scorer and the exporters from the run directory alone.
One format, one parser: the engine and the scorer both import it from here."""

from __future__ import annotations


def trial_id(task_id: str, variant: str, agent: str, repetition: int) -> str:
    """The id of one cell of the run matrix."""
    return f"{task_id}.{variant}.{agent}.r{repetition}"


def parse_trial_id(tid: str) -> tuple[str, str, str, int]:
    """(task, variant, agent, repetition) from an id made by :func:`trial_id` (a task id may hold dots)."""
    task, variant, agent, rep = tid.rsplit(".", 3)
    number = rep.removeprefix("r")
    if number == rep or not (number.isascii() and number.isdigit()):
        raise ValueError(f"not a trial id (task.variant.agent.rN): {tid!r}")
    return task, variant, agent, int(number)
