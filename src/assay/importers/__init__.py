"""Other tools' task formats in: a Harbor / Terminal-Bench collection becomes an assay suite,
with a per-task mapping report beside it (docs/import.md)."""

from __future__ import annotations

from pathlib import Path

from assay.errors import UsageError
from assay.importers import harbor, terminal_bench
from assay.importers.report import ImportReport, TaskReport
from assay.importers.writer import write_suite

FORMATS = {"harbor": harbor, "terminal-bench": terminal_bench}


def import_suite(fmt: str, src: Path, out: Path) -> ImportReport:
    """Import every task of format ``fmt`` found under ``src`` into the new suite ``out``."""
    mod = FORMATS.get(fmt)
    if mod is None:
        raise UsageError(f"unknown task format {fmt!r}; use one of {', '.join(FORMATS)}")
    src = Path(src).resolve()
    if not src.is_dir():
        raise UsageError(f"{src} is not a folder of {fmt} tasks")
    sources = mod.find_tasks(src)
    if not sources:
        raise UsageError(f"{src}: no {fmt} task found (a folder holding "
                         f"{'task.toml' if fmt == 'harbor' else 'task.yaml'})")
    return write_suite(sources, out, ImportReport(format=fmt, source=str(src)), mod.write_task_folder)


__all__ = ["FORMATS", "ImportReport", "TaskReport", "import_suite"]
