"""World kinds by name: one :class:`~assay.registry.Registry` (entry-point group ``assay.worlds``).

A new world is one module with a :class:`World` subclass; a built-in one is listed in
:data:`BUILTIN_WORLDS`, a third-party one is decorated with :func:`world` (or published under the
entry point). The kind is also the prefix of its tool names.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from assay.registry import Registry
from assay.worlds.base import World

W = TypeVar("W", bound=type[World])

BUILTIN_WORLDS = {"ledger": "assay.worlds.ledger:Ledger", "tickets": "assay.worlds.tickets:Tickets",
                  "outbox": "assay.worlds.outbox:Outbox", "user": "assay.worlds.user:User",
                  "webshop": "assay.worlds.webshop.world:Webshop"}
WORLDS: Registry[type[World]] = Registry("world", "assay.worlds", BUILTIN_WORLDS)


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
