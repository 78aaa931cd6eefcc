"""What a sandboxed process may reach: apart from the budget models so that a command's options
(``assay run --network``) can name it without building any model."""

from __future__ import annotations

from enum import StrEnum


class NetworkProfile(StrEnum):
    """What a sandboxed process may reach."""

    none = "none"
    harness = "harness"  # only the harness's own endpoints (gateway, worlds, approvals)
    host = "host"  # explicit opt-in: the host's network, marked in manifest and report

    def narrowed(self, task: "NetworkProfile | None") -> "NetworkProfile":
        """The run's profile narrowed by a task's (never widened): none < harness < host."""
        order = [NetworkProfile.none, NetworkProfile.harness, NetworkProfile.host]
        return self if task is None else min(self, task, key=order.index)
