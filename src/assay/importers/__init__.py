"""Other tools' task formats in: a Harbor / Terminal-Bench / SWE-bench collection becomes an assay suite,
with a per-task mapping report beside it (docs/import.md)."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from assay.errors import UsageError
from assay.importers import harbor, swe_bench, terminal_bench
from assay.importers.report import ImportReport, TaskReport
from assay.importers.writer import write_suite

FORMATS = {"harbor": harbor, "terminal-bench": terminal_bench, "swe-bench": swe_bench}


def import_suite(fmt: str, src: Path, out: Path, *, repos: Path | None = None) -> ImportReport:
    """Import every task of format ``fmt`` found under ``src`` into the new suite ``out``;
    ``repos``: where SWE-bench tasks' repositories are (default: ``repos/`` beside or in ``src``)."""
    mod = FORMATS.get(fmt)
    if mod is None:
        raise UsageError(f"unknown task format {fmt!r}; use one of {', '.join(FORMATS)}")
    src = Path(src).resolve()
    if fmt == "swe-bench":
        return _import_swe(src, Path(out), repos)
    if repos is not None:
        raise UsageError("--repos is for swe-bench imports only")
    if not src.is_dir():
        raise UsageError(f"{src} is not a folder of {fmt} tasks")
    sources = mod.find_tasks(src)
    if not sources:
        raise UsageError(f"{src}: no {fmt} task found (a folder holding "
                         f"{'task.toml' if fmt == 'harbor' else 'task.yaml'})")
    return write_suite(sources, out, ImportReport(format=fmt, source=str(src)), mod.write_task_folder, collection=src)


def _import_swe(src: Path, out: Path, repos: Path | None) -> ImportReport:
    if repos is None:
        repos = next((d for d in (src / "repos", src.parent / "repos") if d.is_dir()), None)
    write = functools.partial(swe_bench.write_task_folder, repos=repos)
    report = ImportReport(format="swe-bench", source=str(src))
    if src.is_file():  # the classic instance JSONL (or a JSON list), laid out as a task repository first
        with tempfile.TemporaryDirectory(prefix="assay-swe-rows-") as tmp:
            try:
                sources = swe_bench.from_jsonl(src, Path(tmp))
            except (ValueError, UnicodeDecodeError) as e:
                raise UsageError(f"{src}: not SWE-bench instance JSONL ({e})") from e
            if not sources:
                raise UsageError(f"{src}: no instance in this file")
            return write_suite(sources, out, report, write)
    if not src.is_dir():
        raise UsageError(f"{src} is neither a SWE-bench task repository nor an instance JSONL file")
    sources = swe_bench.find_tasks(src)
    if not sources:
        raise UsageError(f"{src}: no SWE-bench task found (tasks/<instance_id>/task.yaml, or a .jsonl file)")
    return write_suite(sources, out, report, write, collection=src)


__all__ = ["FORMATS", "ImportReport", "TaskReport", "import_suite"]
