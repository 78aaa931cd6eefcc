"""What a resume does first to a run directory a crash left behind, under the runner lock: a torn
last ledger line is repaired when the line itself proves the seal, else the resume is refused
(exit 3, naming ``ledger.jsonl`` and the line); a killed write's ``.tmp-`` file is removed. Every
action is said: a run that cannot be verified is never resumed into a green summary."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from assay.errors import IntegrityError
from assay.spec.digest import sha256_file
from assay.store.ledger_line import ledger_record
from assay.store.rundir import LEDGER, TRIALS, RunDir

_PATH = re.compile(r'"path": "((?:[^"\\]|\\.)*)"')
_DIGEST = re.compile(r'"sha256": "([0-9a-f]{64})"')


@dataclass(frozen=True)
class TornLine:
    """The last line of the ledger, cut before its newline and not a whole record."""

    number: int
    text: str
    path: str | None  # the file it sealed, when the cut came after the path
    digest: str | None  # its full digest, when the cut came after it


def torn_last_line(rd: RunDir) -> TornLine | None:
    p = rd.path / LEDGER
    if not p.is_file():
        return None
    data = p.read_bytes()
    if not data or data.endswith(b"\n"):
        return None
    lines = data.split(b"\n")
    text = lines[-1].decode("utf-8", errors="replace")
    if ledger_record(text) is not None:
        return None  # whole, only its newline is missing: the next write fences it and it still counts
    path, digest = _PATH.search(text), _DIGEST.search(text)
    return TornLine(len(lines), text, path.group(1) if path else None, digest.group(1) if digest else None)


def repair_torn_ledger(rd: RunDir) -> str | None:
    """Repair the torn last line if it proves what it sealed; return what was done (None: nothing
    torn). Raises :class:`IntegrityError` when the cut leaves a file whose seal cannot be proven."""
    torn = torn_last_line(rd)
    if torn is None:
        return None
    where = f"{rd.path / LEDGER}: line {torn.number} is torn ({torn.text[:60]!r}...)"
    if torn.path is not None:
        target = rd.path / torn.path
        if not os.path.lexists(target):  # sealed before linking: the crash came before the file existed
            return f"{where}: the file it was sealing ({torn.path}) was never written; the line is fenced off"
        if torn.digest is not None and target.is_file() and not target.is_symlink() \
                and sha256_file(target) == torn.digest:
            rd.reseal(torn.path, torn.digest, {"repairs_ledger_line": torn.number})
            return f"{where}: repaired, {torn.path} sealed again with the digest the line holds (it matches the file)"
    raise IntegrityError(f"{where}: it cut off the seal of {torn.path or 'a file'} before its digest, so the file "
                         "cannot be proven unchanged; resume refused (fix: see `assay verify` on the run; "
                         "the results written so far stay as they are)")


def remove_leftover_temp_files(rd: RunDir) -> list[str]:
    """The ``.tmp-`` files a killed write left in trial folders (never evidence: a write links its
    file into place only when complete); removed, and named so the resume can say so."""
    root = rd.path / TRIALS
    removed = []
    if not root.is_dir():
        return removed
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in filenames:
            if not name.startswith(".tmp-"):
                continue
            p = Path(dirpath) / name
            if stat.S_ISREG(os.lstat(p).st_mode):
                os.unlink(p)
                removed.append(p.relative_to(rd.path).as_posix())
    return removed


def prepare_resume(rd: RunDir) -> list[str]:
    """Everything above, in order; the notes the resume prints."""
    notes = []
    torn = repair_torn_ledger(rd)
    if torn:
        notes.append(torn)
    left = remove_leftover_temp_files(rd)
    if left:
        notes.append(f"removed {len(left)} temporary file(s) of writes a killed runner never finished: "
                     + ", ".join(left[:5]) + (" ..." if len(left) > 5 else ""))
    return notes
