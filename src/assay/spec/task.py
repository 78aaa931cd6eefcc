"""The task file (``task.yaml``): one unit of work with its verifier.

A task folder holds::

    task.yaml        this model
    prompt.md        the instruction the agent sees
    workspace/       initial files, copied fresh into every attempt
    setup.sh         optional, run inside the sandbox before the agent (not by the agent)
    hidden/          hidden tests and expected values: only ever copied into the verifier
    verify/          verifier plugin code (python predicates): never enters the agent sandbox
    solution/        the reference solution, run by the ``oracle`` agent
    model.yaml       optional scripted model responses for the gateway's scripted backend
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, field_validator, model_validator

from assay.spec.budget import Budget, Limits, NetworkProfile, Risk
from assay.spec.conversation import ConversationSpec
from assay.spec.environment import EnvironmentSpec
from assay.spec.faults import FaultSpec
from assay.spec.tool_faults import ProcessFaultSpec, ToolFaultSpec
from assay.spec.predicates import PredicateSpec, predicate_adapter
from assay.spec.task_env import DEFAULT_WORKDIR, TaskEnv, check_empty_dir, check_workdir
from assay.spec.task_metadata import TaskMetadata
from assay.spec.worlds import ApprovalsSpec, Behaviour, Canary, WorldsSpec

ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_ID_RE = re.compile(ID_PATTERN)


def check_id(value: str, what: str) -> str:
    if not _ID_RE.match(value):
        raise ValueError(
            f"{what} {value!r} must be 1-64 characters of lowercase letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    return value


class Variant(BaseModel):
    """A variant of a task: same verifier, a different prompt (e.g. a counterfactual rewording)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    id: str = Field(description="Variant id, unique within the task.")
    prompt: str | None = Field(None, description="Prompt text replacing the task's prompt.")
    prompt_file: str | None = Field(None, description="File (in the task folder) holding the prompt.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment for the agent.")
    tool_faults: list[ToolFaultSpec] = Field(
        default_factory=list, description="Fault plan: tool faults the world services inject in this variant.")
    process_faults: list[ProcessFaultSpec] = Field(
        default_factory=list, description="Fault plan: the agent killed (and restarted) after a tool call, the "
        "sandbox restarted, or an approval answered after the agent that asked has ended.")
    note: str = ""

    _check = field_validator("id")(lambda cls, v: check_id(v, "variant id"))


class TaskSpec(BaseModel):
    """A task: prompt, initial state, allowed tools, budget, declared risk and verifier."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    id: str = Field(description="Task id; defaults to the folder name.")
    category: str = Field(description="Category this task scores under (declared in suite.yaml).")
    version: str = Field("1", description="Bump when the task changes meaning.")
    description: str = ""
    prompt_file: str = Field("prompt.md", description="File holding the instruction for the agent.")
    workspace: str = Field("workspace", description="Folder of initial files copied into every attempt.")
    workdir: str = Field(DEFAULT_WORKDIR, description="Where the agent, the solution and the verifier all see the "
                         "workspace (absolute, e.g. /app).")
    empty_dirs: list[str] = Field(default_factory=list, description="Folders (relative to the workspace) every "
                                  "attempt's workspace starts with, empty: no placeholder file needed.")
    env: TaskEnv = Field(default_factory=TaskEnv, description="Environment variables: NAME: value for every role, "
                         "or agent:/verifier:/solution: mappings.")
    network: NetworkProfile | None = Field(None, description="none or harness: narrows the run's --network for this "
                                           "task, never widens it (`allow_internet: true` is read as harness).")
    build_timeout_s: float | None = Field(None, gt=0, description="Seconds the task's environment may take to build.")
    deviations: list[str] = Field(default_factory=list, description="What assay reads differently from what the "
                                  "task asked (filled when the task loads, shown with it).")
    setup: str | None = Field(None, description="Script run before the agent starts, in a sandbox of its own over the "
                                                "workspace and home; nothing of the task folder stays reachable after it.")
    setup_files: list[str] = Field(default_factory=list, description="Task files (or folders) the setup script reads, "
                                   "copied beside it for setup only (never visible to the agent).")
    hidden: str = Field("hidden", description="Folder of hidden tests/expected values (verifier only).")
    verify_dir: str = Field("verify", description="Folder of verifier plugin code (verifier only).")
    solution: str | None = Field(
        "solution/solve.sh", description="Reference solution script, run in the workspace by the oracle agent."
    )
    solution_dir: str | None = Field(None, description="Where the oracle also sees the solution's folder (absolute; "
                                     "Harbor's `/solution`), besides /assay/solution: for a solution that names its path.")
    model_script: str | None = Field(
        None, description="Scripted model turns for the gateway's scripted backend (e.g. model.yaml)."
    )
    tools: list[str] = Field(
        default_factory=lambda: ["shell", "read", "write", "edit", "list"],
        description="Tools the agent may use (names from the tool contract).",
    )
    budget: Budget = Field(default_factory=Budget)
    limits: Limits | None = Field(None, description="Sandbox resource limits; default from the run.")
    risk: Risk = Field(Risk.workspace_write, description="Declared risk; read_only tasks must change nothing.")
    outputs: list[str] = Field(
        default_factory=list,
        description="Glob patterns of workspace paths the agent is asked to write (e.g. answer.txt); "
        "a read_only task may write these and nothing else.",
    )
    predicates: list[SerializeAsAny[PredicateSpec]] = Field(
        min_length=1, description="Verification predicates (required or weighted)."
    )
    verifier_timeout_s: float = Field(300, gt=0, description="Time allowed for the whole verifier.")
    variants: list[Variant] = Field(default_factory=list)
    faults: list[FaultSpec] = Field(default_factory=list, description="Model faults injected by the gateway.")
    tags: list[str] = Field(default_factory=list)
    metadata: TaskMetadata | None = Field(None, description="Difficulty, authors and time estimates (descriptive; "
                                          "recorded in the run's manifest).")
    worlds: WorldsSpec | None = Field(None, description="Initial state of the business worlds the task uses.")
    approvals: ApprovalsSpec | None = Field(None, description="Approval policies and the scripted approver.")
    behaviour: Behaviour | None = Field(None, description="Expected behaviour: act (with calls), clarify or refuse.")
    canaries: list[Canary] = Field(default_factory=list, description="Secrets planted to detect leaks.")
    conversation: ConversationSpec | None = Field(
        None, description="A multi-turn conversation: a typed history, then live turns with per-turn predicates.")
    environment: EnvironmentSpec | None = Field(
        None, description="The image the task runs in (docs/environments.md); default: the suite's "
        "`default_environment`, else the host's system.")
    verifier_environment: EnvironmentSpec | None = Field(
        None, description="The verifier's own image (Harbor's separate verifier: what it holds, e.g. held-out "
        "answers, the agent's image never does); the task's code-executing predicates run over it instead of "
        "`environment`. Its paths are relative to task.yaml, usually under hidden/.")
    extra: dict[str, Any] = Field(default_factory=dict, description="Free-form data for plugins.")
    exposure_intended: dict[str, str] = Field(
        default_factory=dict, description="Lint rules (`assay lint`) whose finding this task intends, each with why "
                                          "(e.g. `tests_in_workspace: the agent is asked to run them`).")
    held_out: bool = Field(False, description="Held-out task: its prompt and expected values appear in reports and "
                                              "exports as digests only (`hidden: true` is accepted as a synonym).")

    @model_validator(mode="before")
    @classmethod
    def _hidden_flag(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("hidden"), bool):
            flag = data["hidden"]
            data = {k: v for k, v in data.items() if k != "hidden"}
            data["held_out"] = bool(data.get("held_out")) or flag
        return data

    @model_validator(mode="before")
    @classmethod
    def _allow_internet(cls, data: Any) -> Any:
        """An imported ``allow_internet`` becomes ``network:``; the open internet is never given,
        so ``true`` reads as ``harness`` and the task carries that deviation."""
        if isinstance(data, dict) and "allow_internet" in data:
            data = dict(data)
            allow = data.pop("allow_internet")
            if not isinstance(allow, bool):
                raise ValueError("allow_internet must be true or false (or write network: none|harness)")
            if "network" in data:
                raise ValueError("allow_internet and network both given; keep network: none|harness")
            data["network"] = "harness" if allow else "none"
            if allow:
                data["deviations"] = [*data.get("deviations", []), "allow_internet: true is read as network: harness "
                                      "(the harness's own endpoints only; no open internet)"]
        return data

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        return check_id(v, "task id")

    _workdir = field_validator("workdir")(lambda cls, v: check_workdir(v))
    _solution_dir = field_validator("solution_dir")(lambda cls, v: None if v is None else check_workdir(v))

    @field_validator("empty_dirs")
    @classmethod
    def _empty_dirs(cls, v: list[str]) -> list[str]:
        return [check_empty_dir(d) for d in v]

    @field_validator("network")
    @classmethod
    def _network(cls, v: NetworkProfile | None) -> NetworkProfile | None:
        if v == NetworkProfile.host:
            raise ValueError("a task may narrow the run's network (none, harness), never widen it: host is "
                             "chosen for a whole run with --network host")
        return v

    @model_validator(mode="after")
    def _network_serves(self) -> "TaskSpec":
        served = [n for n, v in (("worlds", self.worlds), ("approvals", self.approvals)) if v is not None]
        if self.network == NetworkProfile.none and served:
            raise ValueError(f"network: none, but the task's {' and '.join(served)} are served by the harness over "
                             "its network; use network: harness")
        return self

    @field_validator("predicates", mode="before")
    @classmethod
    def _predicates(cls, v: Any) -> Any:
        if not isinstance(v, list):
            return v
        if all(isinstance(p, PredicateSpec) for p in v):
            return v
        return predicate_adapter().validate_python(v)

    @field_validator("predicates")
    @classmethod
    def _unique_ids(cls, v: list[PredicateSpec]) -> list[PredicateSpec]:
        seen: set[str] = set()
        for p in v:
            if p.id in seen:
                raise ValueError(f"predicate id {p.id!r} appears twice; predicate ids must be unique")
            seen.add(p.id)
        return v

    @model_validator(mode="after")
    def _turn_predicate_ids(self) -> "TaskSpec":
        if self.conversation is None:
            return self
        seen = {p.id for p in self.predicates}
        for n, preds in self.conversation.turn_predicates().items():
            for p in preds:
                if p.id in seen:
                    raise ValueError(f"conversation.turns[{n - 1}]: predicate id {p.id!r} is used twice; "
                                     "predicate ids must be unique across the task and its turns")
                seen.add(p.id)
        return self

    @field_validator("variants")
    @classmethod
    def _unique_variants(cls, v: list[Variant]) -> list[Variant]:
        ids = [x.id for x in v]
        if len(set(ids)) != len(ids):
            raise ValueError("variant ids must be unique")
        if "base" in ids:
            raise ValueError("variant id 'base' is reserved for the task's own prompt")
        return v

    @model_validator(mode="after")
    def _process_faults_can_fire(self) -> "TaskSpec":
        """A process fault is triggered by a world tool call (or its approval request): a plan that
        can never fire is bad input, not a silent "not exercised"."""
        for v in self.variants:
            for f in v.process_faults:
                if self.worlds is None:
                    raise ValueError(f"variant {v.id!r}: process_faults are triggered by world tool calls, and this "
                                     "task declares no `worlds:`; declare one or drop the plan")
                if f.kind.value == "late_approval" and self.approvals is None:
                    raise ValueError(f"variant {v.id!r}: a late_approval fault needs `approvals:` with a policy that "
                                     f"asks for {f.tool!r}; add one or drop the fault")
        return self

    def variant_ids(self) -> list[str]:
        """The base prompt plus every declared variant."""
        return ["base", *(v.id for v in self.variants)]

    def variant(self, variant_id: str) -> Variant | None:
        for v in self.variants:
            if v.id == variant_id:
                return v
        return None
