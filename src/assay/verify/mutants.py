"""Verifier mutation testing: does a task's verifier notice an end state that is *almost* right?

From the oracle's end state (its final workspace and world states) each mutant breaks one thing
the oracle did: a file it wrote is deleted, truncated or has one value altered, a file it removed
comes back, an untouched file is changed (an extra side effect); a world row it added is
deleted, altered, swapped for another row, or duplicated. The task's verifier runs on each; a
mutant that still passes *survives*, naming the task and the predicates that let it through.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from assay.errors import VerifierError
from assay.records.verifier_inputs import VerifierInputs
from assay.sandbox.base import SandboxBackend
from assay.spec.digest import tree_digests
from assay.spec.load import LoadedTask
from assay.trace.events import TraceEvent
from assay.verify.predicates.worlds import NON_BUSINESS
from assay.verify.snapshot import copy_snapshot
from assay.verify.verifier import run_verifier
from assay.worlds.base import diff_states


#: source files: deleted and truncated, but not altered (see docs/tasks.md, "Mutants")
CODE_SUFFIXES = frozenset({".py", ".js", ".mjs", ".ts", ".sh", ".go", ".rs", ".java", ".c", ".h", ".cpp", ".rb"})


@dataclass
class OracleState:
    """What the oracle left, as the verifier saw it (kept by :class:`Recorder`)."""

    task: LoadedTask
    work: Path
    initial_digests: dict[str, str]
    extra: VerifierInputs
    events: list[TraceEvent]


@dataclass
class Mutant:
    name: str
    apply_files: Callable[[Path], None] | None = None
    file: str | None = None  # the output file it deletes, truncates or alters (workspace-relative)
    extra: VerifierInputs | None = None
    #: (world, table, rows before, rows after): applied to a copy of the world's database when it runs
    db_changes: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)


@dataclass
class MutantResult:
    task_id: str
    variant: str
    mutant: str
    survived: bool
    held: list[str] = field(default_factory=list)  # required predicates that passed on the mutant
    error: str | None = None
    file: str | None = None  # the output file the mutant broke (file mutants only)
    #: a file of the reference solution's own the task never asks for (:func:`mark_unasked`): its
    #: survival is shown, not counted as the verifier's weakness
    unasked: bool = False


def alter_text(text: str) -> str:
    """Change one value: the first JSON leaf, else the first number, else one line."""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if doc is not None and not isinstance(doc, (str, int, float, bool)):
        if _alter_leaf(doc):
            return json.dumps(doc, indent=2)
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):  # JSON Lines: one value of the first record
        try:
            rec = json.loads(line)
        except ValueError:
            break
        if isinstance(rec, (dict, list)) and _alter_leaf(rec):
            lines[i] = json.dumps(rec) + "\n"
            return "".join(lines)
    m = re.search(r"\d+", text)
    if m:
        return text[:m.start()] + str(int(m.group()) + 1) + text[m.end():]
    body = [i for i, ln in enumerate(lines) if ln.strip()]
    if not body:
        return text + "x"
    i = body[len(body) // 2]
    lines[i] = lines[i].rstrip("\n")[::-1] + "x\n"
    return "".join(lines)


def _alter_leaf(doc: Any) -> bool:
    items = list(doc.items()) if isinstance(doc, dict) else list(enumerate(doc))
    for key, value in items:
        if isinstance(value, (dict, list)):
            if _alter_leaf(value):
                return True
            continue
        if isinstance(value, bool):
            doc[key] = not value
        elif isinstance(value, (int, float)):
            doc[key] = value + 1
        elif isinstance(value, str):
            doc[key] = value + "-x"
        else:
            doc[key] = 0
        return True
    return False


def file_mutants(state: OracleState) -> list[Mutant]:
    final = tree_digests(state.work)
    initial = state.initial_digests
    out: list[Mutant] = []
    touched = sorted(p for p, d in final.items() if initial.get(p) != d and not d.startswith("symlink:"))
    for rel in touched:
        out.append(Mutant(f"delete {rel}", lambda w, r=rel: (w / r).unlink(), file=rel))
        out.append(Mutant(f"truncate {rel}", lambda w, r=rel: (w / r).write_bytes(b""), file=rel))
        if Path(rel).suffix not in CODE_SUFFIXES:  # a changed literal in source code is often an equivalent program
            out.append(Mutant(f"alter one value in {rel}",
                              lambda w, r=rel: (w / r).write_text(alter_text((w / r).read_text(errors="replace"))),
                              file=rel))
    source = state.task.dir / state.task.spec.workspace
    for rel in sorted(set(initial) - set(final)):
        if (source / rel).is_file() and not (source / rel).is_symlink():
            out.append(Mutant(f"keep {rel} (the oracle removed it)",
                              lambda w, r=rel: ((w / r).parent.mkdir(parents=True, exist_ok=True),
                                                shutil.copyfile(source / r, w / r))))
    untouched = sorted(p for p, d in final.items() if initial.get(p) == d and not d.startswith("symlink:"))
    if untouched and touched:  # the workspace is where this task's result lives
        rel = untouched[0]
        out.append(Mutant(f"extra side effect: change untouched {rel}",
                          lambda w, r=rel: (w / r).write_bytes((w / r).read_bytes() + b"\nmutant\n")))
    return out


def _retarget(extra: VerifierInputs, world: str, table: str,
              change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """A mutant's inputs: the world state with one table changed, and that change, which is made
    alike in the world's database (what ``world_sql`` reads) when the mutant runs (:func:`_mutated_db`)."""
    worlds = copy.deepcopy(dict(extra.worlds))
    w = worlds[world]
    before = copy.deepcopy(w["final"].get(table) or {})
    change(w["final"].setdefault(table, {}))
    w["diff"] = diff_states(w["initial"], w["final"])
    return {"extra": replace(extra, worlds=worlds),
            "db_changes": [(world, table, before, copy.deepcopy(w["final"][table]))]}


def _mutated_db(m: Mutant, tmp: Path) -> VerifierInputs:
    """The mutant's inputs with each changed world's database copied into ``tmp`` and changed like
    its state (rows deleted, updated, inserted by their key), so SQL predicates see the mutant too."""
    assert m.extra is not None
    if not m.db_changes:
        return m.extra
    dbs = dict(m.extra.world_db)
    for world, table, before, after in m.db_changes:
        src = dbs.get(world)
        if src is None or not Path(src).is_file():
            continue
        dst = tmp / f"{world}.sqlite"
        if str(dst) != src:
            shutil.copyfile(src, dst)
        _apply_rows(dst, table, before, after)
        dbs[world] = str(dst)
    return replace(m.extra, world_db=dbs)


def _key_column(key: str, row: dict[str, Any]) -> str:
    return next((c for c, v in row.items() if v == key), "id")


def _apply_rows(db_path: Path, table: str, before: dict[str, Any], after: dict[str, Any]) -> None:
    db = sqlite3.connect(db_path)
    try:
        cols = {r[1] for r in db.execute(f'PRAGMA table_info("{table}")')}
        for key, row in before.items():
            if key not in after:
                db.execute(f'DELETE FROM "{table}" WHERE "{_key_column(key, row)}" = ?', (key,))
        for key, row in after.items():
            fields = {c: v for c, v in row.items() if c in cols}
            if key in before and before[key] != row:
                kc = _key_column(key, before[key])
                sets = ", ".join(f'"{c}" = ?' for c in fields if c != kc)
                db.execute(f'UPDATE "{table}" SET {sets} WHERE "{kc}" = ?',
                           (*[v for c, v in fields.items() if c != kc], key))
            elif key not in before:  # a duplicated row: the same values under a new key
                kc = _key_column(key, row) if any(v == key for v in row.values()) else "id"
                fields = {**fields, kc: key} if kc in cols else fields
                names = ", ".join(f'"{c}"' for c in fields)
                db.execute(f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" for _ in fields)})',
                           tuple(v if not isinstance(v, (dict, list)) else json.dumps(v) for v in fields.values()))
        db.commit()
    finally:
        db.close()


def world_mutants(state: OracleState) -> list[Mutant]:
    out: list[Mutant] = []
    for name, w in sorted(state.extra.worlds.items()):
        if name in NON_BUSINESS:  # the user channel is judged by the calls and behaviour, not as state
            continue
        for table, d in sorted((w.get("diff") or {}).items()):
            rows = w["final"].get(table) or {}
            for key in sorted(d.get("added", {}))[:1]:
                out.append(Mutant(f"{name}.{table}: delete added row {key}",
                                  **_retarget(state.extra, name, table, lambda t, k=key: t.pop(k))))
                out.append(Mutant(f"{name}.{table}: alter one value of row {key}",
                                  **_retarget(state.extra, name, table, lambda t, k=key: _alter_field(t[k]))))
                others = [k for k in sorted(rows) if k != key]
                if others:
                    out.append(Mutant(f"{name}.{table}: swap row {key} for row {others[0]}", **_retarget(
                        state.extra, name, table, lambda t, k=key, o=others[0]: t.__setitem__(k, dict(t[o])))))
                out.append(Mutant(f"{name}.{table}: extra side effect (row {key} twice)", **_retarget(
                    state.extra, name, table, lambda t, k=key: t.__setitem__(f"{k}-mutant", dict(t[k])))))
            for key, fields in sorted(d.get("changed", {}).items())[:1]:
                first = sorted(fields)[0]
                out.append(Mutant(f"{name}.{table}: undo the change of row {key}", **_retarget(
                    state.extra, name, table, lambda t, k=key, f=fields: t[k].update({x: v[0] for x, v in f.items()}))))
                out.append(Mutant(f"{name}.{table}: alter {first} of row {key}", **_retarget(
                    state.extra, name, table, lambda t, k=key, f=first: t[k].__setitem__(f, _other(t[k].get(f))))))
    return out


def _alter_field(row: dict[str, Any]) -> None:
    """Alter the row's first business value: a number if it has one, else a text that is not an
    identifier or a timestamp (changing a row's id or creation time is not a wrong result)."""
    plain = [f for f in row if f != "id" and not f.endswith(("_id", "_at")) and f not in ("ts", "created", "updated")]
    pick = next((f for f in plain if isinstance(row[f], (int, float)) and not isinstance(row[f], bool)), None)
    pick = pick or next((f for f in plain if isinstance(row[f], str)), None) or (plain or list(row))[0]
    row[pick] = _other(row[pick])


def _other(value: Any) -> Any:
    holder = [value]
    return holder[0] if _alter_leaf(holder) and holder[0] != value else f"{value}-mutant"


def mutants_of(state: OracleState) -> list[Mutant]:
    return file_mutants(state) + world_mutants(state)


async def try_mutants(state: OracleState, variant: str, backend: SandboxBackend) -> list[MutantResult]:
    """Run the task's verifier on every mutant of the oracle's end state."""
    results = []
    with tempfile.TemporaryDirectory(prefix="assay-mutants-") as tmp:
        for i, m in enumerate(mutants_of(state)):
            ws = Path(tmp) / f"{i}" / "work"
            copy_snapshot(state.work, ws)
            if m.apply_files is not None:
                m.apply_files(ws)
                if tree_digests(ws) == tree_digests(state.work):
                    continue  # the same end state as the oracle's (e.g. truncating an empty file): not a mutant
            extra = _mutated_db(m, ws.parent) if m.extra is not None else state.extra
            try:
                report = await run_verifier(state.task, ws, Path(tmp) / f"{i}" / "verify",
                                            initial_digests=state.initial_digests, events=state.events,
                                            backend=backend, extra=extra)
            except VerifierError as e:  # fail closed: a crash is not a pass, but it is named
                results.append(MutantResult(state.task.id, variant, m.name, False, error=str(e)[:300]))
                continue
            held = [p.id for p in report.predicates if p.required and p.passed]
            results.append(MutantResult(state.task.id, variant, m.name, report.held, held, file=m.file))
    return mark_unasked(results, state.task.prompt_for(variant))


def mark_unasked(results: list[MutantResult], prompt: str) -> list[MutantResult]:
    """Mark the mutants of a file the reference solution wrote for itself: every mutant of it
    survived, the prompt never names it (its path or its name as a word), and a mutant of another
    output was caught, so the verifier reads the task's outputs, just not this one (a helper
    script beside the answer). An output the prompt names, or a task none of whose outputs is
    read, keeps its survivors as weakness."""
    by_file: dict[str, list[MutantResult]] = {}
    for r in results:
        if r.file is not None:
            by_file.setdefault(r.file, []).append(r)
    caught = {f for f, rs in by_file.items() if any(not r.survived for r in rs)}
    if not caught:
        return results
    for f, rs in by_file.items():
        if f not in caught and not _named(f, prompt):
            for r in rs:
                r.unasked = True
    return results


def _named(rel: str, prompt: str) -> bool:
    """Whether ``prompt`` names the file ``rel``: its path, or its file name as a word of its own."""
    if rel in prompt:
        return True
    return re.search(rf"(?<![\w.-]){re.escape(Path(rel).name)}(?![\w-])", prompt) is not None


class Recorder:
    """A verifier observer that keeps each verification's end state (by trial id) for mutants."""

    def __init__(self, keep: Path):
        self.keep = keep
        self.states: dict[str, OracleState] = {}

    def __call__(self, root: Path, task: LoadedTask, initial: dict[str, str], extra: VerifierInputs,
                 events: list[TraceEvent], report: Any, work: Path | None = None) -> None:
        trial_id = root.parent.parent.name  # scratch/<trial>/<attempt>/verify
        dest = self.keep / trial_id
        if dest.exists():
            shutil.rmtree(dest)
        copy_snapshot(work or root / "work", dest / "work")
        dbs = dict(extra.world_db)
        for name, db in extra.world_db.items():  # world snapshots outlive the run
            if Path(db).is_file():
                shutil.copyfile(db, dest / f"{name}.sqlite")
                dbs[name] = str(dest / f"{name}.sqlite")
        extra = replace(copy.deepcopy(extra), world_db=dbs)
        self.states[trial_id] = OracleState(task, dest / "work", dict(initial), extra, list(events))
