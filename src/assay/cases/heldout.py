"""Held-out tasks: their prompts and expected values never appear in clear outside the run
directory's raw evidence; reports and exports show digests.

Report and export code calls one object::

    mask = HeldOut.from_tasks(suite.tasks)        # or HeldOut.from_suite_dir(path)
    row = mask.result(result.model_dump())       # a result row for a report / export
    ev = mask.event(task_id, event.model_dump()) # a trace event (timeline, exports)
    text = mask.text(rendered_text)              # any text a report or export writes
    view = mask.task_view(task)                  # {id, held_out, prompt_sha256, expected_sha256}

``result`` replaces a held-out task's predicate evidence and the agent's claim by their digests
(evidence holds expected values, numbers included) and masks every held-out prompt or expected
string anywhere else in the row. ``text`` masks them in free text, longest first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from assay.spec.digest import sha256_bytes, sha256_json, walk_files
from assay.spec.load import LoadedTask, load_suite

MIN_LEN = 6
HIDDEN_FILE_LIMIT = 65536


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def expected_values(task: LoadedTask) -> dict[str, Any]:
    """What a held-out task expects: behaviour and predicate specs (the verifier's answers)."""
    spec = task.spec
    return {"behaviour": spec.behaviour.model_dump(mode="json") if spec.behaviour else None,
            "predicates": [p.model_dump(mode="json") for p in spec.predicates]}


class HeldOut:
    def __init__(self, tasks: Iterable[LoadedTask], *, ids: Iterable[str] = ()):
        self.tasks = {t.id: t for t in tasks if t.spec.held_out}
        self.ids = set(self.tasks) | set(ids)
        found: dict[str, str] = {}
        for t in self.tasks.values():
            texts = [t.prompt_for(v) for v in t.spec.variant_ids()]
            texts += [s for s in _strings(expected_values(t)["behaviour"])]
            texts += [s for p in t.spec.predicates for k, s in _pred_strings(p.model_dump(mode="json"))]
            texts += _hidden_texts(t)
            for s in texts:
                s = s.strip()
                if len(s) >= MIN_LEN:
                    found.setdefault(s, f"[held-out {t.id} sha256:{sha256_bytes(s.encode())[:16]}]")
        self._texts = sorted(found.items(), key=lambda kv: -len(kv[0]))

    @classmethod
    def from_tasks(cls, tasks: Iterable[LoadedTask]) -> "HeldOut":
        return cls(tasks)

    @classmethod
    def from_suite_dir(cls, path: Path | str) -> "HeldOut":
        return cls(load_suite(path).tasks)

    @classmethod
    def from_ids(cls, ids: Iterable[str]) -> "HeldOut":
        """From the held-out task ids alone (e.g. a run manifest): evidence, claims and trace
        events of those tasks become digests; free text cannot be masked without the tasks."""
        return cls((), ids=ids)

    def is_held_out(self, task_id: str) -> bool:
        return task_id in self.ids

    def event(self, task_id: str, event: dict[str, Any]) -> dict[str, Any]:
        """A trace event safe to show: a held-out task's event payload becomes its digest."""
        if task_id in self.ids:
            return {**event, "data": {"sha256": sha256_json(event.get("data"))}}
        return self.data(event)

    def text(self, text: str) -> str:
        for s, token in self._texts:
            if s in text:
                text = text.replace(s, token)
        return text

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.data(v) for v in value]
        return value

    def result(self, row: dict[str, Any]) -> dict[str, Any]:
        """A result row safe to show: a held-out task's evidence and claim become digests."""
        if row.get("task_id") in self.ids:
            row = dict(row)
            row["predicates"] = [{**p, "evidence": {"sha256": sha256_json(p.get("evidence"))}}
                                 for p in row.get("predicates") or [] if isinstance(p, dict)]
            if row.get("agent_claim") is not None:
                row["agent_claim"] = "sha256:" + sha256_bytes(str(row["agent_claim"]).encode())
        return self.data(row)

    def task_view(self, task: LoadedTask) -> dict[str, Any]:
        return {"id": task.id, "held_out": task.spec.held_out,
                "prompt_sha256": sha256_bytes(task.prompt.encode()),
                "expected_sha256": sha256_json(expected_values(task))}


def _pred_strings(p: dict[str, Any]) -> list[tuple[str, str]]:
    skip = {"id", "kind", "world", "table", "path", "tool", "tests", "file", "function", "cwd"}
    return [(k, s) for k, v in p.items() if k not in skip for s in _strings(v)]


def _hidden_texts(task: LoadedTask) -> list[str]:
    root = task.dir / task.spec.hidden
    out = []
    if root.is_dir():
        for p in walk_files(root):
            if p.is_file() and not p.is_symlink() and p.stat().st_size <= HIDDEN_FILE_LIMIT:
                try:
                    out.append(p.read_text())
                except UnicodeDecodeError:
                    continue
    return out
