"""Sandbox backends by name: one :class:`~assay.registry.Registry` (entry-point group ``assay.sandboxes``)."""

from __future__ import annotations

from assay.registry import Registry
from assay.sandbox.base import SandboxBackend

BACKENDS: Registry[type[SandboxBackend]] = Registry("sandbox backend", "assay.sandboxes", {
    "host": "assay.sandbox.host:HostBackend",
    "bwrap": "assay.sandbox.bwrap.backend:BwrapBackend",
})


def register_sandbox_backend(cls: type[SandboxBackend], *, replace: bool = False) -> type[SandboxBackend]:
    """Register a third-party backend class under its ``name`` (usable as a class decorator)."""
    return BACKENDS.register(cls.name, cls, replace=replace)


def backends() -> dict[str, type[SandboxBackend]]:
    return BACKENDS.as_dict()


def get_backend(name: str) -> SandboxBackend:
    """A fresh backend object; an unknown name is :class:`~assay.registry.UnknownPlugin`."""
    return BACKENDS.get(name)()


def status_ahead(name: str | None) -> None:
    """Begin the status check of the backend a run will use (``name``, else the default's first
    choice, bwrap), while the run loads and checks its suite. Never raises."""
    from assay.sandbox.settings import check_settings

    wanted = name or "bwrap"
    try:
        check_settings()  # a bad sandbox setting is refused by the run, never met by a probe first
        if wanted in BACKENDS:
            get_backend(wanted).status_ahead()
    except Exception:  # noqa: BLE001 - what cannot be probed says so when the run asks for it
        pass


def default_backend_name() -> str:
    """bubblewrap where it works here, otherwise host (loudly marked unsandboxed)."""
    if "bwrap" in BACKENDS and get_backend("bwrap").status().usable:
        return "bwrap"
    return "host"
