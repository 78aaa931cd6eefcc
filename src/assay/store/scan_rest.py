"""What a run scan checks once every trial was read: the manifest is sealed, the ledger has no
damaged line, the results log has no stray line, every sealed file no trial covered is there with
its digest (a result sealed into the log is named as missing from it), every artifact matches
its name. :mod:`assay.store.scan` calls it from ``finish``."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Callable

from assay.spec.digest import sha256_file
from assay.store.ledger_index import SealedIndex
from assay.store.odd_files import not_regular
from assay.store.prehash import Prehash
from assay.store.results_log import LOG, LogIndex, key_parts
from assay.store.ledger_line import damage_text
from assay.store.rundir import ARTIFACTS, LABEL_FILE, MANIFEST, SCORES, TRIALS, RunDir
from assay.store.scan_log import SEALED, UNSEALED, no_line_text

#: the order of the checks (see integrity.verify_run): problems are reported sorted by it
MANIFEST_CHECK, ARTIFACT, RESULT = 0, 3, 4
#: a score version and its rows (score/versions.py): derived, never read back as evidence
SCORE_VERSION = re.compile(r"scores/score-[0-9]{4,}(?:\.json|\.trials\.jsonl)")


def check_rest(rd: RunDir, sealed: SealedIndex, log: LogIndex | None, live: set[str],
               problem: Callable[[tuple[Any, ...], str], None], *, outputs: bool = True,
               prehashed: Prehash | None = None) -> int:
    """The checks above, each problem handed to ``problem`` with its sort key; the files checked.
    ``outputs`` False: the score versions are left to `assay verify` (a score, a report or an
    export reads none of them, and hashing every older one, 765 MB of rows each at 10^6 trials,
    would make every scoring of a run slower than the one before). ``prehashed``: the score
    versions hashed while the trials were read (store/prehash.py), each used if still that file."""
    root = rd.path
    checked = 0
    if MANIFEST not in sealed:
        problem((MANIFEST_CHECK,), f"{MANIFEST}: not sealed in the ledger")
    for n, line in sealed.damaged:  # found while the index was built (rd.ledger_damage's lines)
        problem((MANIFEST_CHECK,), damage_text(n, line))
    what = not_regular(root / LOG)
    if what is not None:
        problem((UNSEALED, "", (LOG,)), f"{LOG}: {what}, not a regular file (evidence is never followed)")
    for at in log.odd if log is not None else []:
        problem((UNSEALED, "", (LOG, str(at))), f"{LOG}: byte {at}: a line that is JSON but no result (added after "
                                                 "the run?)")
    for rel, digest in sealed.unchecked():
        if not outputs and SCORE_VERSION.fullmatch(rel):
            continue
        p = root / rel
        checked += 1
        logged = key_parts(rel)
        if logged is not None:  # never a path on disk: a result sealed into a log that is not there
            problem((SEALED, rel), no_line_text(rel))
            continue
        if not os.path.lexists(p):
            problem((SEALED, rel), f"{rel}: deleted after it was written")
            continue
        what = not_regular(p)
        if what is not None:
            problem((SEALED, rel), f"{rel}: now {what}, not a regular file (evidence is never followed)")
            continue
        actual = (prehashed.digest(rel) if prehashed is not None else None) or sha256_file(p)
        if actual == digest:
            continue
        if trial_of(rel) in live and rel.endswith("/trace.jsonl") and trace_grew_only(p, digest):
            continue  # the attempt in flight appends to its trace; what was sealed is intact
        problem((SEALED, rel), f"{rel}: modified after it was written (sha256 {actual[:12]} != sealed {digest[:12]})")
    for rel in unsealed_labels(root, sealed):
        problem((UNSEALED, "", (rel,)), f"{rel}: a label file the ledger never sealed (added after the run?); "
                                        "its labels are not read")
    art_root = root / ARTIFACTS / "sha256"
    if art_root.is_dir():
        for art in sorted(art_root.glob("*/*")):
            if art.name.startswith(".tmp-"):
                continue
            checked += 1
            what = not_regular(art)
            if what is not None:
                problem((ARTIFACT, art.parts), f"{art.relative_to(root).as_posix()}: {what}, not a regular file "
                                               "(evidence is never followed)")
                continue
            if sha256_file(art) != art.name:
                problem((ARTIFACT, art.parts), f"{art.relative_to(root).as_posix()}: content does not match its digest")
    return checked


def unsealed_labels(root: Path, sealed: SealedIndex) -> list[str]:
    """The label files in ``scores/`` the ledger does not name (a sealed one changed since is named
    with every sealed file above): a person's labels change the audited rates, so one planted is
    never silent."""
    try:
        names = sorted(e.name for e in os.scandir(root / SCORES) if LABEL_FILE.fullmatch(e.name))
    except OSError:
        return []
    return [rel for rel in (f"{SCORES}/{n}" for n in names) if rel not in sealed]


def trial_of(rel: str) -> str | None:
    parts = rel.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == TRIALS else None


def trace_grew_only(path: Path, sealed: str) -> bool:
    """True if some prefix of the trace (ending at a line boundary) has the sealed digest."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for line in f:
            h.update(line)
            if h.copy().hexdigest() == sealed:
                return True
    return False
