"""World kinds by name: one :class:`~assay.registry.Registry` (entry-point group ``assay.worlds``).

A new world is one module with a :class:`World` subclass that names its initial-state model
(``declaration``); a built-in one is one line in ``spec/world_kinds.py:BUILTIN_WORLDS``, a
third-party one is decorated with :func:`world`, registered with ``assay.register("world", ...)``
or published under the entry point. Registering here also fills the task loader's registry of
declaration models (``spec/world_kinds.py:WORLD_DECLARATIONS``), which ``spec/`` cannot get from
this room. The kind is also the prefix of its tool names.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from assay.registry import Registry
from assay.spec.world_kinds import (
    BUILTIN_WORLDS,
    ENTRY_POINT_GROUP,
    WORLD_DECLARATIONS,
    declaration_of,
)
from assay.worlds.base import World

__all__ = ["BUILTIN_WORLDS", "WORLDS", "get_world", "world", "world_kinds"]

W = TypeVar("W", bound=type[World])


class _WorldRegistry(Registry[type[World]]):
    """The world classes; each registration also declares the kind's model to the task loader."""

    def register(self, name: str, value: type[World], *, replace: bool = False) -> type[World]:
        super().register(name, value, replace=replace)
        model = declaration_of(value)
        if model is not None:
            WORLD_DECLARATIONS.register(name, model, replace=True)  # the world's registration decided the name
        else:
            WORLD_DECLARATIONS.unregister(name)
        return value

    def unregister(self, name: str) -> None:
        super().unregister(name)
        WORLD_DECLARATIONS.unregister(name)


WORLDS: Registry[type[World]] = _WorldRegistry("world", ENTRY_POINT_GROUP, BUILTIN_WORLDS)


def world(kind: str) -> Callable[[W], W]:
    """Name a world class ``kind``; outside assay's own world modules this also registers it."""

    def deco(cls: W) -> W:
        cls.kind = kind
        if BUILTIN_WORLDS.get(kind, "").partition(":")[0] != cls.__module__:
            WORLDS.register(kind, cls)
        return cls

    return deco


def get_world(kind: str) -> type[World]:
    """The world class of ``kind``; an unknown one is :class:`~assay.registry.UnknownPlugin` (a KeyError)."""
    return WORLDS.get(kind)


def world_kinds() -> list[str]:
    return WORLDS.names()
