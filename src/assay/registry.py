"""The one registry mechanism behind every extension point of assay.

Agents, product agents, sandbox backends, model backends, predicates and worlds are each a
:class:`Registry`: built-ins are *declared* (a table of ``"module:attribute"`` references, or a
loader function) and resolved lazily, third parties come through one entry-point group per kind
or through :meth:`Registry.register`. Built-ins and entry points load on the first read whatever
was registered before, so registering a plugin early can never hide a built-in, and a name can
only be taken twice by saying ``replace=True``.
"""

from __future__ import annotations

import importlib
import sys
import threading
from importlib.metadata import EntryPoints, entry_points
from typing import Any, Callable, Generic, Iterator, Mapping, TypeVar

from assay.errors import UsageError

T = TypeVar("T")

#: a built-in: the object itself, or a lazy ``"package.module:attribute"`` reference
Declared = Any


class RegistryError(UsageError):
    """A name registered twice, or asked for and unknown."""


class UnknownPlugin(RegistryError, KeyError):
    """A name no registry of its kind knows: the one error every registry raises for it.

    It names the kind, the name, the known names and the fix (the entry-point group a third
    party publishes under). It is a :class:`KeyError` too, for callers that look names up."""

    def __init__(self, kind: str, name: str, known: list[str], group: str, *, also: str = "", fix: str = ""):
        self.kind, self.name, self.known, self.group = kind, name, list(known), group
        alternatives = f" {also}" if also else ""
        fix = fix or (f"use one of these, or install a plug-in that publishes {name!r} under the "
                      f"entry-point group {group!r}")
        super().__init__(f"unknown {kind} {name!r}; known: {', '.join(self.known) or 'none'}{alternatives} (fix: {fix})")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


_INSTALLED: tuple[tuple[str, ...], EntryPoints] | None = None
_INSTALLED_LOCK = threading.Lock()


def installed_entry_points(group: str) -> EntryPoints:
    """The entry points published under ``group``. Every installed distribution is read once per
    process (again only when ``sys.path`` changed): each read scans them all, about 10 ms here,
    and a run reads one group per registry."""
    global _INSTALLED
    key = tuple(sys.path)
    with _INSTALLED_LOCK:
        if _INSTALLED is None or _INSTALLED[0] != key:
            _INSTALLED = (key, entry_points())
        return _INSTALLED[1].select(group=group)


def resolve(ref: Declared) -> Any:
    """The object a ``"module:attribute"`` reference names (anything else is returned as is)."""
    if not isinstance(ref, str) or ":" not in ref:
        return ref
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Names to extension objects of one kind.

    ``builtins`` is a mapping of declared built-ins or a function returning one (called once, on
    the first read). ``group`` is the entry-point group third parties publish under;
    ``from_entry_point`` turns a loaded entry-point object into the registered value (e.g. the
    spec half of a predicate declaration).
    """

    def __init__(self, kind: str, group: str, builtins: Mapping[str, Declared] | Callable[[], Mapping[str, Declared]],
                 *, from_entry_point: Callable[[Any], T] | None = None):
        self.kind = kind
        self.group = group
        self._declared_builtins = builtins
        self._from_ep = from_entry_point
        self._builtin: dict[str, Declared] | None = None
        self._extra: dict[str, Declared] = {}
        self._resolved: dict[str, T] = {}
        self._entry_points_loaded = False
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ loading
    def _builtins(self) -> dict[str, Declared]:
        if self._builtin is None:
            decl = self._declared_builtins
            self._builtin = {}
            self._builtin = dict(decl() if callable(decl) else decl)
        return self._builtin

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        for ep in installed_entry_points(self.group):
            value = ep.load()
            if self._from_ep is not None:
                value = self._from_ep(value)
            self._add(ep.name, value, replace=False, source=f"entry point {ep.value!r} ({self.group})")

    def _ensure(self) -> None:
        with self._lock:
            self._builtins()
            self._load_entry_points()

    def _add(self, name: str, value: Declared, *, replace: bool, source: str) -> None:
        if not isinstance(name, str) or not name:
            raise RegistryError(f"a {self.kind} needs a non-empty name ({source})")
        current = self._extra.get(name, self._builtins().get(name))
        if current is not None and not replace and current is not value:
            origin = "a built-in" if name in self._builtins() and name not in self._extra else "already registered"
            raise RegistryError(f"{self.kind} {name!r} is {origin}; {source} cannot take its name "
                                f"(fix: choose another name, or register with replace=True to override it on purpose)")
        self._extra[name] = value
        self._resolved.pop(name, None)

    # ------------------------------------------------------------------ public
    def register(self, name: str, value: T, *, replace: bool = False) -> T:
        """Add a third-party extension; built-ins stay visible beside it."""
        with self._lock:
            self._ensure()
            self._add(name, value, replace=replace, source="register()")
        return value

    def unregister(self, name: str) -> None:
        """Remove a third-party extension (built-ins cannot be removed)."""
        with self._lock:
            self._extra.pop(name, None)
            self._resolved.pop(name, None)

    def get(self, name: str) -> T:
        """The extension registered under ``name``; unknown names are a usage error listing the known ones."""
        with self._lock:
            self._ensure()
            if name in self._resolved:
                return self._resolved[name]
            declared = self._extra.get(name, self._builtins().get(name))
            if declared is None:
                raise self.unknown(name)
            value = resolve(declared)
            self._resolved[name] = value
            return value

    def unknown(self, name: str, *, also: str = "") -> UnknownPlugin:
        """The error for a name this registry does not know (``also``: other accepted forms)."""
        return UnknownPlugin(self.kind, name, self.names(), self.group, also=also)

    def __contains__(self, name: object) -> bool:
        self._ensure()
        return name in self._extra or name in self._builtins()

    def names(self) -> list[str]:
        self._ensure()
        return sorted({*self._builtins(), *self._extra})

    def builtin_names(self) -> list[str]:
        return sorted(self._builtins())

    def items(self) -> Iterator[tuple[str, T]]:
        """Every extension, resolved (importing lazily declared built-ins)."""
        for name in self.names():
            yield name, self.get(name)

    def as_dict(self) -> dict[str, T]:
        return dict(self.items())
