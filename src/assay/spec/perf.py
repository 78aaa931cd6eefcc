"""A performance suite (``perf.yaml``): scenarios that time an agent's own cost, beside capability.

Each scenario runs against the scripted gateway, so the model is out of the number
(docs/performance.md). A performance suite has no end state to verify: it is not a task suite
and is never scored for capability.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from assay.spec.user_file import read_user_yaml

FIX = "see the performance suite format in docs/performance.md"


class ScenarioKind(str, Enum):
    cold_start = "cold_start"  # a fresh home: exec start to the first model request
    resume = "resume"  # a session of N planted turns opened: to the first request, first answer, tokens sent
    store = "store"  # a store of N planted sessions: startup of a new session
    turns = "turns"  # N live turns of one session: memory peak, store bytes and tokens sent per turn
    compaction = "compaction"  # a long planted history of long messages: does the product fold it
    concurrency = "concurrency"  # N sessions at once: open time and its inflation over one


#: the sizes a scenario kind is measured at when the suite names none
DEFAULT_SIZES = {ScenarioKind.resume: [10, 100, 1000], ScenarioKind.store: [100, 1000, 10000],
                 ScenarioKind.turns: [10], ScenarioKind.compaction: [100, 400], ScenarioKind.concurrency: [1, 4, 16]}


class Scenario(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]{0,31}$", description="The scenario's name in figures and gates.")
    kind: ScenarioKind
    sizes: list[int] = Field(default_factory=list, description="History turns, sessions, live turns (one "
                             "number: the turn count) or concurrent sessions; default per kind.")
    words: int = Field(8, ge=1, le=4000, description="Words in each planted message (compaction: make it long).")
    repeat: int | None = Field(None, ge=1, le=100, description="Repetitions of this scenario (default: the suite's).")

    @model_validator(mode="after")
    def _sizes(self) -> "Scenario":
        if any(s < 1 for s in self.sizes):
            raise ValueError(f"scenario {self.id}: sizes must be 1 or more")
        if self.kind == ScenarioKind.cold_start and self.sizes:
            raise ValueError(f"scenario {self.id}: cold_start takes no sizes")
        return self

    def size_list(self) -> list[int]:
        return list(self.sizes) or list(DEFAULT_SIZES.get(self.kind, []))


class PerfSuite(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    name: str
    description: str = ""
    repeat: int = Field(5, ge=1, le=100, description="Repetitions of every figure.")
    timeout_s: float = Field(300, gt=0, description="Seconds one turn of an agent may take.")
    scenarios: list[Scenario] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> "PerfSuite":
        ids = [s.id for s in self.scenarios]
        if len(ids) != len(set(ids)):
            raise ValueError(f"scenario ids must be unique: {ids}")
        return self


def load_perf_suite(path: Path) -> PerfSuite:
    """``perf.yaml`` (or a folder holding one), each problem one line naming file, field and fix."""
    file = path / "perf.yaml" if path.is_dir() else path
    f = read_user_yaml(file, what="performance suite", fix=FIX)
    try:
        return PerfSuite.model_validate(f.data)
    except ValidationError as e:
        raise f.invalid(e, FIX) from None
