"""A person's labels of suspect passes (true pass or false pass), kept as numbered, sealed files
beside the score versions (``scores/labels-NNNN.json``): labelling never edits a score or an
earlier label; the next score version reads every label file, the latest label of a trial wins,
and shows the strict rate over labelled-true passes beside the raw one."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from assay.errors import RunDirError
from assay.spec.digest import sha256_file
from assay.store.rundir import LABEL_FILE, SCORES, RunDir, write_exclusive



def label_files(path: Path | str) -> list[Path]:
    d = Path(path) / SCORES
    if not d.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in d.iterdir() if (m := LABEL_FILE.fullmatch(p.name))]
    return [p for _, p in sorted(found)]


def write_labels(path: Path | str, labels: dict[str, bool], *, by: str, note: str = "") -> Path:
    """One new label file: trial id -> True (a true pass) or False (a false pass)."""
    rd = RunDir.open(path)
    body = {"labelled_by": by, "labelled_at": time.time(), "note": note,
            "labels": {tid: ("true_pass" if ok else "false_pass") for tid, ok in sorted(labels.items())}}
    for _ in range(1000):
        files = label_files(rd.path)
        n = int(LABEL_FILE.fullmatch(files[-1].name).group(1)) + 1 if files else 1  # type: ignore[union-attr]
        target = rd.path / SCORES / f"labels-{n:04d}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            write_exclusive(target, (json.dumps(body, indent=1) + "\n").encode())
        except RunDirError:
            continue
        rd.seal(target.relative_to(rd.path).as_posix())
        return target
    raise RunDirError(f"{rd.path / SCORES}: could not find a free label number")


def read_labels(path: Path | str) -> dict[str, dict[str, Any]]:
    """trial id -> {label, labelled_by, file}: the latest label of each trial, from the label files
    sealed in the ledger as they were written. One planted beside them, or changed since, is not a
    person's label and is never read (`assay verify`, and a checked score, name it)."""
    out: dict[str, dict[str, Any]] = {}
    files = label_files(path)
    rd = RunDir.open(path) if files else None
    for f in files:
        rel = f"{SCORES}/{f.name}"
        sealed = rd.sealed_digest(rel) if rd is not None else None
        if sealed is None or sha256_file(f) != sealed:
            continue
        try:
            doc = json.loads(f.read_text())
        except (OSError, ValueError) as e:
            raise RunDirError(f"{f}: unreadable label file ({e})") from None
        for tid, label in (doc.get("labels") or {}).items():
            out[tid] = {"label": label, "labelled_by": doc.get("labelled_by", ""), "file": f.name}
    return out


__all__ = ["label_files", "read_labels", "write_labels"]
