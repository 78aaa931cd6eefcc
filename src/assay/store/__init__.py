"""Store: the run directory (source of truth) and what is derived from it.

``RunDir`` is imported on first use (PEP 562): a scan's reading process
(:mod:`assay.store.scan_workers`) imports one small module of this package, not every model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["RunDir"]

if TYPE_CHECKING:
    from assay.store.rundir import RunDir


def __getattr__(name: str) -> Any:
    if name != "RunDir":
        raise AttributeError(f"module 'assay.store' has no attribute {name!r}")
    from assay.store.rundir import RunDir

    globals()["RunDir"] = RunDir
    return RunDir
