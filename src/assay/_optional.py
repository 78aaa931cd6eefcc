"""Importing optional modules of assay itself without hiding real import errors inside them."""

from __future__ import annotations

import importlib
from types import ModuleType


def optional_import(name: str) -> ModuleType | None:
    """The module, or None if it (or a package on its path) does not exist."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name is not None and (name == e.name or name.startswith(e.name + ".")):
            return None
        raise
