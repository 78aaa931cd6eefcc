"""Budgets and resource limits: small value objects normalised once at the edge."""

from __future__ import annotations

from enum import StrEnum

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.spec.network import NetworkProfile

__all__ = ["Budget", "BudgetName", "Limits", "NetworkProfile", "Risk"]


class Budget(BaseModel):
    """What one attempt may spend. ``None`` means unlimited for that dimension."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    wall_time_s: float = Field(300, gt=0,
                               description="Wall-clock seconds for the agent process.")
    cpu_time_s: float | None = Field(None, gt=0,
                                     description="CPU seconds of all the agent sandbox's processes "
                                     "together: a compute budget a busy host cannot spend for the agent (the wall "
                                     "time it can); exhausted, the attempt is a timeout with reason cpu_time. "
                                     "Enforced by the sandboxes that bound CPU as a whole (bubblewrap).")
    turns: int | None = Field(None, ge=1, description="Maximum model turns (assistant messages).")
    tool_calls: int | None = Field(None, ge=0, description="Maximum tool calls.")
    model_calls: int | None = Field(None, ge=0, description="Maximum model calls through the gateway.")
    tokens: int | None = Field(None, ge=0, description="Maximum input+output tokens.")
    cost_usd: float | None = Field(None, ge=0, description="Maximum model cost in USD.")

    def merged(self, override: "Budget | None") -> "Budget":
        """This budget with the explicitly set fields of ``override`` taking precedence."""
        if override is None:
            return self
        return self.model_copy(update=override.model_dump(exclude_unset=True))


class BudgetName(StrEnum):
    """The budgets of a :class:`Budget`, by name: which one ended an attempt."""

    wall_time = "wall_time"
    cpu_time = "cpu_time"
    turns = "turns"
    tool_calls = "tool_calls"
    model_calls = "model_calls"
    tokens = "tokens"
    cost_usd = "cost_usd"
    run_budget = "run_budget"  # the run-wide budget (--max-cost, --max-tokens), not the attempt's own


#: the largest limits any Linux host can grant: beyond these a value is not a limit but an overflow
#: deep in the launch (10**30 MiB was an infrastructure error in every trial); what this host grants
#: is checked before a run (the backend's ``limits_problem``)
MAX_MIB = 2**32  # 4 PiB: bytes stay within a 64-bit rlimit
MAX_SECONDS = 2**31 - 1
MAX_PROCESSES = 2**22  # the kernel's pid_max ceiling
MAX_OPEN_FILES = 2**31 - 64  # the kernel's fs.nr_open ceiling


class Limits(BaseModel):
    """Resource limits of a sandbox: bounds on all its processes together (control group or
    watcher, see docs/sandbox.md) and rlimits on each."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    cpu_time_s: int | None = Field(600, ge=1, le=MAX_SECONDS,
                                   description="CPU seconds of the whole sandbox (and RLIMIT_CPU).")
    memory_mb: int | None = Field(4096, ge=16, le=MAX_MIB,
                                  description="MiB of the whole sandbox, tmpfs included (and RLIMIT_AS).")
    address_space_mb: int | None = Field(None, ge=16, le=MAX_MIB, description="RLIMIT_AS in MiB where it must exceed "
                                         "`memory_mb`: Chromium reserves over 64 GiB of address space it never uses; "
                                         "the sandbox's memory stays bounded by `memory_mb`. None: `memory_mb`.")
    processes: int | None = Field(256, ge=1, le=MAX_PROCESSES,
                                  description="Max processes (pid namespace + RLIMIT_NPROC).")
    file_size_mb: int | None = Field(512, ge=1, le=MAX_MIB, description="RLIMIT_FSIZE in MiB.")
    open_files: int | None = Field(1024, ge=16, le=MAX_OPEN_FILES, description="RLIMIT_NOFILE.")
    disk_mb: int | None = Field(1024, ge=1, le=MAX_MIB,
                                description="MiB the sandbox may write: the size of its /tmp tmpfs, "
                                "and the bound on its workspace's growth plus what /tmp holds "
                                "(`storage_mb` is accepted as a synonym).")
    cpus: float | None = Field(None, gt=0, le=1024, description="CPUs the sandbox may use at once, as a share of "
                               "CPU time (cgroup cpu.max, or CFS quota on cgroup v1); None: unbounded.")

    @model_validator(mode="before")
    @classmethod
    def _storage(cls, data: Any) -> Any:
        """``storage_mb`` (Harbor's name) is ``disk_mb``; both, differing, is a contradiction."""
        if isinstance(data, dict) and "storage_mb" in data:
            data = dict(data)
            storage = data.pop("storage_mb")
            if "disk_mb" in data and data["disk_mb"] != storage:
                raise ValueError("storage_mb and disk_mb name the same bound and differ; keep one")
            data["disk_mb"] = storage
        return data


class Risk(StrEnum):
    """The declared risk of a task: what the agent is allowed to change."""

    read_only = "read_only"
    workspace_write = "workspace_write"
    external_write = "external_write"
