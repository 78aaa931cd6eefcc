"""Store: the run directory (source of truth) and what is derived from it."""

from assay.store.rundir import RunDir

__all__ = ["RunDir"]
