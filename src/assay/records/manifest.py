"""The run manifest: everything that shaped a result, bound to it (law 4)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.spec.budget import Budget, Limits, NetworkProfile
from assay.spec.environment import EnvironmentRecord
from assay.spec.faults import FaultSpec
from assay.spec.run_budget import RunBudgetRecord
from assay.spec.task_metadata import TaskMetadata

MANIFEST_SCHEMA_VERSION = 1


class TaskRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    category: str
    version: str
    digest: str = Field(description="Digest over every file of the task folder.")
    files: dict[str, str] = Field(description="Relative path -> sha256, prompts and verifier code included.")
    prompt_sha256: str
    budget: Budget
    risk: str
    tools: list[str]
    variants: list[str]
    simulated_user: bool = Field(False, description="A conversation task with a model-driven user (the run "
                                                     "then has a simulator gateway of its own).")
    environment: EnvironmentRecord | None = Field(None, description="The task's image (name@sha256:...) and how it "
                                                  "deviates from what was declared; None: the host's system.")
    verifier_environment: EnvironmentRecord | None = Field(
        None, description="The verifier's own image, where the task has one (Harbor's separate verifier): its "
        "code-executing checks ran over it.")
    held_out: bool = Field(False, description="A held-out task: reports and exports count it in the aggregates "
                           "but never show its prompt, trace or per-trial rows.")
    workdir: str = Field("/workspace", description="Where the agent and the verifier saw the workspace.")
    network: str | None = Field(None, description="The task's own network: (none, harness), narrowing the run's.")
    deviations: list[str] = Field(default_factory=list, description="What assay read differently from what the "
                                  "task asked (e.g. an imported allow_internet: true read as harness).")
    control: dict[str, str] | None = Field(None, description="An impossible-task control (run --controls): of "
                                           "(the task), rule, changed, proof; never in the capability score.")
    metadata: TaskMetadata | None = Field(None, description="The task's difficulty, authors and time estimates.")
    source_digest: str | None = Field(None, description="The content digest the task's source pinned and the import "
                                      "verified (a Harbor dataset.toml's sha256:...); None: not pinned.")


class AgentRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    kind: str
    version: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    track: str = "controlled"


class SandboxRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    backend: str = "host"
    network: NetworkProfile = NetworkProfile.harness
    isolated: bool = False
    limits: Limits = Field(default_factory=Limits)
    details: dict[str, Any] = Field(default_factory=dict, description="bwrap path/version, root, ...")


class GatewayRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    backend: str | None = Field(None, description="scripted | replay | upstream | local; None when unused.")
    model: str | None = None
    vendor_tier: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    prices: dict[str, Any] = Field(default_factory=dict, description="model -> per-token prices used for cost.")
    faults: list[FaultSpec] = Field(default_factory=list)


class PlanRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    repeat: int = 1
    jobs: int = 1
    max_retries: int = 1
    variants: str = "all"
    trials: list[str] = Field(default_factory=list, description="Every planned trial id, in order.")
    seed: int | None = Field(None, description="Seed that shuffled the trial order (None: matrix order).")
    max_per_agent: int | None = Field(None, description="Attempts of one agent in flight at once (None: --jobs).")
    max_per_model: int | None = Field(None, description="Attempts using one upstream model at once (None: --jobs).")
    executor: str = Field("local", description="local | procs | ray (where the run started; resume may use another).")
    deadline_s: float | None = Field(None, description="Campaign deadline in seconds from the start of execution.")
    controls: bool = Field(False, description="The run added each task's impossible-task controls (--controls).")
    excluded: list[str] = Field(default_factory=list, description="Tasks of the suite --exclude left out of the plan.")
    results: Literal["files", "log"] = Field("files", description="Where results are written: a file per attempt, "
                                             "or one append-only log (--results log; docs/run-directory.md).")


class RunManifest(BaseModel):
    """Written once at the start of a run; read back to resume, verify and score."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = MANIFEST_SCHEMA_VERSION
    run_id: str
    created_at: float
    harness: dict[str, Any] = Field(description="assay version, commit, python, platform.")
    host: dict[str, Any] = Field(default_factory=dict, description="Host facts: os, kernel, cpus, memory.")
    suite: dict[str, Any] = Field(description="name, version, path, digest, repo commit, dirty files' digests.")
    categories: dict[str, float] = Field(description="Frozen normalised category weights.")
    tasks: list[TaskRecord]
    agents: list[AgentRecord]
    sandbox: SandboxRecord = Field(default_factory=SandboxRecord)
    gateway: GatewayRecord = Field(default_factory=GatewayRecord)
    judge: GatewayRecord | None = Field(None, description="The judge model's own gateway (--judge-model), if any.")
    plan: PlanRecord = Field(default_factory=PlanRecord)
    score: dict[str, Any] = Field(default_factory=dict, description="Score version and frozen capability weights.")
    track: str = "controlled"
    run_budget: RunBudgetRecord | None = Field(None, description="The run-wide budget (--max-cost, --max-tokens) "
                                               "and the estimate printed before the run; null when unlimited.")
    extra: dict[str, Any] = Field(default_factory=dict)

    def held_out_ids(self) -> frozenset[str]:
        """The ids of the run's held-out tasks (what every report and export withholds)."""
        return frozenset(t.id for t in self.tasks if t.held_out)
