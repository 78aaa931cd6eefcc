"""World kinds by name. A new world is one module with a :class:`World` subclass decorated
with :func:`world`; third parties register through the ``assay.worlds`` entry point group."""

from __future__ import annotations

from typing import Callable, TypeVar

from assay.worlds.base import World

_WORLDS: dict[str, type[World]] = {}
W = TypeVar("W", bound=type[World])
BUILTIN_MODULES = ("assay.worlds.ledger", "assay.worlds.tickets", "assay.worlds.outbox", "assay.worlds.user")


def world(kind: str) -> Callable[[W], W]:
    """Register a world class under ``kind`` (also the prefix of its tool names)."""

    def deco(cls: W) -> W:
        cls.kind = kind
        _WORLDS[kind] = cls
        return cls

    return deco


def get_world(kind: str) -> type[World]:
    load_builtin_worlds()
    if kind not in _WORLDS:
        raise KeyError(f"no world kind {kind!r}; known: {sorted(_WORLDS)}")
    return _WORLDS[kind]


def world_kinds() -> list[str]:
    load_builtin_worlds()
    return sorted(_WORLDS)


_loaded = False


def load_builtin_worlds() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib
    from importlib.metadata import entry_points

    for mod in BUILTIN_MODULES:
        importlib.import_module(mod)
    for ep in entry_points(group="assay.worlds"):
        ep.load()
