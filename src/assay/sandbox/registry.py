"""Sandbox backends by name. Third parties register through the ``assay.sandboxes`` entry point."""

from __future__ import annotations

from importlib.metadata import entry_points

from assay.errors import UsageError
from assay.sandbox.base import SandboxBackend

_BACKENDS: dict[str, type[SandboxBackend]] = {}


def register_backend(cls: type[SandboxBackend]) -> type[SandboxBackend]:
    _BACKENDS[cls.name] = cls
    return cls


def _load_builtins() -> None:
    from assay.sandbox.host import HostBackend

    register_backend(HostBackend)
    from assay._optional import optional_import

    bwrap = optional_import("assay.sandbox.bwrap")
    if bwrap is not None:
        register_backend(bwrap.BwrapBackend)
    for ep in entry_points(group="assay.sandboxes"):
        register_backend(ep.load())


def backends() -> dict[str, type[SandboxBackend]]:
    if not _BACKENDS:
        _load_builtins()
    return dict(_BACKENDS)


def get_backend(name: str) -> SandboxBackend:
    table = backends()
    if name not in table:
        raise UsageError(f"unknown sandbox backend {name!r}; known: {', '.join(sorted(table))}")
    return table[name]()


def default_backend_name() -> str:
    """bubblewrap where it works here, otherwise host (loudly marked unsandboxed)."""
    table = backends()
    if "bwrap" in table and table["bwrap"]().status().usable:
        return "bwrap"
    return "host"
