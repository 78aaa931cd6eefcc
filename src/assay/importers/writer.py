"""An imported suite written whole or not at all: tasks are written into a staging folder beside
the output, loaded with assay's own loader (a task it refuses is taken out, with the loader's
reason in the report), and the folder is renamed into place only at the end."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import yaml

from assay.errors import SpecError, UsageError
from assay.importers.common import task_id
from assay.importers.report import ImportReport, TaskReport
from assay.importers.source_check import source_problem
from assay.spec.load import load_suite

#: writes one source task into the given folder, filling its report; returns its category (None: refused)
TaskWriter = Callable[[Path, Path, TaskReport], "str | None"]
MAX_ROUNDS = 50


def _suite_yaml(root: Path, name: str, categories: dict[str, str], source: str) -> dict[str, float]:
    weights = {c: 1.0 for c in sorted(set(categories.values()))} or {"default": 1.0}
    doc = {"name": name, "version": "1.0.0",
           "description": f"Imported from {source}. Category weights are 1.0 each: the importer's choice "
                          "(see import-report.md), edit them here.",
           "categories": [{"id": c, "weight": w} for c, w in weights.items()],
           "tasks": sorted(categories)}
    (root / "suite.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return weights


def write_suite(sources: list[Path], out: Path, report: ImportReport, write_one: TaskWriter,
                collection: Path | None = None) -> ImportReport:
    """Import every source task folder into the suite ``out`` (which must not exist yet);
    ``collection``: the folder the user gave, which every task folder must lie in."""
    out = out.resolve()
    if out.exists():
        raise UsageError(f"{out} already exists; choose a new folder for the imported suite (-o)")
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.import-", dir=out.parent))
    try:
        tasks_dir = stage / "tasks"
        tasks_dir.mkdir()
        categories: dict[str, str] = {}
        for src in sources:
            rep = TaskReport(source=str(src), id=_unique(src.name, {t.id for t in report.tasks}))
            report.tasks.append(rep)
            dst = tasks_dir / rep.id
            dst.mkdir()
            why = source_problem(src, collection) if src.is_dir() or src.is_symlink() else None
            if why is not None:  # nothing of it is read
                rep.refuse(why)
                shutil.rmtree(dst)
                continue
            try:
                cat = write_one(src, dst, rep)
            except (OSError, UnicodeDecodeError, ValueError) as e:
                rep.refuse(f"could not be read: {e}")
                cat = None
            except RecursionError:  # a source file nested past the parser's recursion (TOML, JSON)
                rep.refuse("could not be read: a source file is nested too deep to be parsed")
                cat = None
            except (TypeError, KeyError, AttributeError, IndexError) as e:  # a field of a type not foreseen
                rep.refuse(f"could not be mapped: a field is not of the type the format says ({type(e).__name__}: {e})")
                cat = None
            if cat is None or not rep.imported:
                rep.imported = False
                shutil.rmtree(dst)
            else:
                categories[rep.id] = cat
        if not categories:
            raise UsageError(f"no task could be imported from {report.source}: "
                             + "; ".join(f"{t.id}: {' '.join(t.refused)}" for t in report.tasks))
        name = task_id(out.name)
        for _ in range(MAX_ROUNDS):  # take out what assay's loader refuses, then load again
            report.weights = _suite_yaml(stage, name, categories, report.source)
            if not categories:
                raise UsageError(f"no task could be imported from {report.source} (assay's loader refused them all): "
                                 + "; ".join(f"{t.id}: {' '.join(t.refused)}" for t in report.tasks))
            try:
                load_suite(stage)
                break
            except SpecError as e:
                bad = _refused_by_loader(e, tasks_dir, report, categories)
                if not bad:
                    raise
        report.write(stage)
        stage.rename(out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return report


def _refused_by_loader(e: SpecError, tasks_dir: Path, report: ImportReport, categories: dict[str, str]) -> set[str]:
    bad: set[str] = set()
    by_id = {t.id: t for t in report.tasks}
    for p in e.problems:
        try:
            tid, *inside = Path(p.file).resolve().relative_to(tasks_dir.resolve()).parts
        except ValueError:
            continue
        if tid in categories:
            # named by the task's source: the staging folder the loader read is gone by the time anyone reads this
            written = replace(p, file=f"the {'/'.join(inside) or 'task folder'} written for {by_id[tid].source}")
            by_id[tid].refuse(f"assay's loader refused {written.render()}")
            bad.add(tid)
    for tid in bad:
        categories.pop(tid)
        shutil.rmtree(tasks_dir / tid, ignore_errors=True)
    return bad


def _unique(name: str, taken: set[str]) -> str:
    base = tid = task_id(name)
    n = 2
    while tid in taken:
        tid = f"{base[:60]}-{n}"
        n += 1
    return tid
