"""What a task's ``worlds:`` may name: each world kind's declaration (initial-state) model, by kind.

A world declares its own model on its plug-in (``World.declaration``), so a new world adds no
field to a schema here. ``spec/`` sits below ``worlds/`` and imports none of it; the task loader
still has to validate ``worlds: {KIND: ...}`` by kind, so this room keeps its own registry of
declaration models, filled from the same three places as ``worlds/registry.py:WORLDS``:

* the built-in kinds, named (not imported) in :data:`BUILTIN_WORLDS`, the one table of them,
  which the world registry reads too; each resolves lazily to ``<World class>.declaration``
  through :mod:`assay.registry`, only when a task names the kind;
* third parties registered at run time (``assay.register("world", ...)``, ``@world``), which the
  world registry copies here;
* the ``assay.worlds`` entry-point group, loaded on the first lookup, so a published world is
  found the first time a task names it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from assay.registry import Registry, UnknownPlugin

#: built-in world kind -> "module:Class" of its World plug-in (a new built-in world is its module
#: and one line here; ``user`` is the clarification channel, offered by ``behaviour:``, never declared)
BUILTIN_WORLDS: dict[str, str] = {
    "ledger": "assay.worlds.ledger:Ledger", "tickets": "assay.worlds.tickets:Tickets",
    "outbox": "assay.worlds.outbox:Outbox", "user": "assay.worlds.user:User",
    "webshop": "assay.worlds.webshop.world:Webshop",
}

ENTRY_POINT_GROUP = "assay.worlds"


def declaration_of(world_class: Any) -> type[BaseModel] | None:
    """The declaration model a World plug-in carries (``None``: the kind cannot be declared)."""
    return getattr(world_class, "declaration", None)


#: world kind -> its declaration model (or None for a kind a task cannot declare)
WORLD_DECLARATIONS: Registry[type[BaseModel] | None] = Registry(
    "world kind", ENTRY_POINT_GROUP, lambda: {k: f"{ref}.declaration" for k, ref in BUILTIN_WORLDS.items()},
    from_entry_point=declaration_of)


def declaration(kind: str) -> type[BaseModel] | None:
    """The model of ``kind``'s initial state; an unknown kind is :class:`~assay.registry.UnknownPlugin`."""
    return WORLD_DECLARATIONS.get(kind)


def declarable_kinds() -> list[str]:
    """Every installed world kind a task's ``worlds:`` may name (resolves each, so: error paths only)."""
    return [k for k in WORLD_DECLARATIONS.names() if WORLD_DECLARATIONS.get(k) is not None]


def _refusal(kind: str, message: str, value: Any, *, installed: bool = False) -> InitErrorDetails:
    kinds = ", ".join(declarable_kinds()) or "none"
    fix = (f"remove worlds.{kind} (that world is offered without a declaration); the declarable world kinds: {kinds}"
           if installed else
           f"name one of the installed world kinds: {kinds}; or install the plug-in that publishes {kind!r} "
           f"(entry-point group {ENTRY_POINT_GROUP!r}, or assay.register(\"world\", ...))")
    return InitErrorDetails(type=PydanticCustomError("unknown_world_kind", "{message}", {"message": message, "fix": fix}),
                            loc=(kind,), input=value)


def _nested(kind: str, err: ValidationError) -> list[InitErrorDetails]:
    """The errors of one entry's own model, placed under its kind (``worlds.KIND.field``)."""
    out: list[InitErrorDetails] = []
    for e in err.errors():
        ctx = {k: v for k, v in (e.get("ctx") or {}).items()}
        detail = InitErrorDetails(type=e["type"], loc=(kind, *e["loc"]), input=e["input"], ctx=ctx)  # type: ignore[typeddict-item]
        try:
            ValidationError.from_exception_data("check", [detail])
        except (KeyError, TypeError, ValueError):  # a custom error type of the world's own model: keep its message
            detail = InitErrorDetails(type=PydanticCustomError(e["type"], "{message}", {"message": e["msg"], **ctx}),
                                      loc=(kind, *e["loc"]), input=e["input"])
        out.append(detail)
    return out


def validate_declarations(data: dict[str, Any]) -> dict[str, BaseModel]:
    """Each ``worlds:`` entry validated by its kind's declaration model; every problem raised at once,
    located ``KIND.field`` (the loader prefixes ``worlds.``)."""
    out: dict[str, BaseModel] = {}
    errors: list[InitErrorDetails] = []
    for kind, value in data.items():
        if value is None:  # `KIND: null` declares nothing, as an absent entry
            continue
        try:
            model = declaration(str(kind))
        except UnknownPlugin:
            errors.append(_refusal(str(kind), f"unknown world kind {kind!r}", value))
            continue
        if model is None:
            errors.append(_refusal(str(kind), f"world kind {kind!r} takes no initial state under worlds:", value,
                                  installed=True))
            continue
        if isinstance(value, model):
            out[kind] = value
            continue
        try:
            out[kind] = model.model_validate(value)
        except ValidationError as e:
            errors.extend(_nested(str(kind), e))
    if errors:
        raise ValidationError.from_exception_data("WorldsSpec", errors)
    return out
