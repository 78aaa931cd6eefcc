"""What ``assay agents list`` and ``assay agents install`` do, as library functions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

from assay.agents.products import install
from assay.agents.registry import known_agents
from assay.errors import AgentUnavailable, UsageError


@dataclass(frozen=True)
class AgentRow:
    name: str
    kind: str
    version: str | None
    usable: bool
    detail: str


def list_agents() -> list[AgentRow]:
    """Every registered agent and whether it can run here (info() never raises)."""
    rows = []
    for name, factory in sorted(known_agents().items()):
        try:
            info = factory({}).info()
            rows.append(AgentRow(name, info.kind, info.version, info.usable, info.detail))
        except Exception as e:  # noqa: BLE001 - one broken plugin must not hide the others
            rows.append(AgentRow(name, "?", None, False, f"{type(e).__name__}: {e}"))
    return rows


def install_agents(names: list[str], *, version: str | None = None, force: bool = False,
                   progress: Callable[[str], None] | None = None) -> Iterator[install.Installation]:
    """Install each named product agent; unknown names are refused before anything is installed."""
    known = install.specs()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"cannot install {unknown}: installable agents are {sorted(known)}")
    if version is not None and len(names) != 1:
        raise UsageError("--version applies to one agent at a time")
    for name in names:
        if progress is not None:
            progress(name)
        try:
            yield install.install(name, version=version, force=force)
        except AgentUnavailable:
            raise
        except OSError as e:
            raise AgentUnavailable(f"installing {name} failed: {e}") from e
