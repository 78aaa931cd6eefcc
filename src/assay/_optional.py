"""Importing optional modules of assay itself without hiding real import errors inside them."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any, Callable


def optional_import(name: str) -> ModuleType | None:
    """The module, or None if it (or a package on its path) does not exist."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name is not None and (name == e.name or name.startswith(e.name + ".")):
            return None
        raise


def lazy_names(package: str, table: dict[str, str]) -> Callable[[str], Any]:
    """A package's PEP 562 ``__getattr__``: each public name in ``table`` (name -> the module that
    defines it) is imported on first use and kept in the package, so importing the package is cheap."""
    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value
    return __getattr__


#: the import names each extra of pyproject.toml provides (what ``missing_extra`` looks for)
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "mcp": ("mcp",),
    "ray": ("ray",),
    "observe": ("prometheus_client", "opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"),
    "data": ("pandas", "pyarrow"),
    "judge": ("krippendorff", "numpy", "scipy"),
    "local": ("llama_cpp",),
    "agents": ("zstandard",),
    "plots": ("matplotlib",),
}


def install_hint(extra: str) -> str:
    """The install that works: assay is installed from a checkout (no published distribution)."""
    return f"pip install -e '.[{extra}]' in the assay checkout"


def missing_extra(extra: str) -> str | None:
    """``None`` when every package of ``extra`` imports, else one line naming the missing package
    and the exact install command."""
    import importlib.util

    for module in EXTRA_MODULES[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a parent package is missing
            found = False
        if not found:
            return f"needs the {module.split('.')[0]} package of the assay[{extra}] extra (fix: {install_hint(extra)})"
    return None
