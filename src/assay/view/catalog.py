"""The run list's rows: one summary per run directory, from its manifest, its latest score version
and its verification, rebuilt only when the run changed.

A new row is built from the sealed files it shows (the manifest and the latest score version, each
checked against the digest the ledger sealed for it) and marked *verifying…* until the full
verification, in the background (:mod:`assay.view.verifying`), replaces it: so the list over a
thousand runs opens at once, and a run whose other files were changed turns TAMPERED as soon as it
is reached, never shown as verified.

A row is the derived index of the list (never the evidence): it is kept in memory and written to
``RUN/reports/view-row.json`` when the run directory is writable, keyed by the signature of what
it was made from (the manifest, the ledger, the score versions, the control log). Opening the list
reads each run's signature and its kept row, never its result files; a run whose signature changed
is read again. A run that fails verification is a *tampered* row naming the files, never with its
numbers; a run that cannot be read is a row with its problem.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import AssayError
from assay.score.versions import score_files
from assay.spec.digest import sha256_file
from assay.store.control_client import address
from assay.store.integrity import verify_run
from assay.store.rundir import LEDGER, MANIFEST, REPORTS, SCORES, RunDir, trial_files
from assay.view.score_summary import read_summary
from assay.view.verifying import Verifier

ROW_FILE = "view-row.json"
ROW_VERSION = 3
_PATH_OF_PROBLEM = re.compile(r"^([^\s:]+):")


@dataclass
class AgentLine:
    name: str
    strict_rate: float | None
    gate: str
    cost_usd: float | None
    ci: list[float | None] = field(default_factory=lambda: [None, None])


@dataclass
class RunRow:
    name: str  # the folder's name under RUNS_DIR (the viewer's id of the run)
    status: str  # running | scored | not scored | tampered | unreadable
    run_id: str = ""
    suite: str = ""
    created_at: float = 0.0
    planned: int = 0
    agents: list[AgentLine] = field(default_factory=list)
    gate: str = ""
    cost_usd: float | None = None
    score_version: int | None = None
    suspects: int = 0
    problems: list[str] = field(default_factory=list)
    tampered_files: list[str] = field(default_factory=list)
    signature: list[Any] = field(default_factory=list)
    verified: bool = False  # the full verification passed (else only its shown files were checked)

    @property
    def verifying(self) -> bool:
        """Shown from its sealed files while the full verification is still to come."""
        return not self.verified and self.status in ("scored", "not scored")

    @property
    def strict_rate(self) -> float | None:
        rates = [a.strict_rate for a in self.agents if a.strict_rate is not None]
        return max(rates) if rates else None

    def record(self) -> dict[str, Any]:
        return {"v": ROW_VERSION, **asdict(self)}


def signature(path: Path) -> list[Any]:
    """What a row depends on, cheaply: sizes and change times of the manifest, ledger, scores, control."""
    out: list[Any] = []
    for rel in (MANIFEST, LEDGER, SCORES, "control"):
        try:
            st = os.stat(path / rel)
            out.append([rel, st.st_size, st.st_mtime_ns])
        except OSError:
            out.append([rel, None, None])
    return out


def is_running(path: Path) -> bool:
    where = address(path)
    if where is None or not isinstance(where.get("pid"), int):
        return False
    try:
        os.kill(where["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def tampered_files(problems: list[str]) -> list[str]:
    """The run-relative files a verification names (its first word before a colon)."""
    out = []
    for p in problems:
        m = _PATH_OF_PROBLEM.match(p)
        if m and m.group(1) not in out:
            out.append(m.group(1))
    return out


def sealed_problems(rd: RunDir, rels: list[str]) -> list[str]:
    """Each of ``rels`` that is not sealed in the ledger or differs from its sealed digest."""
    out = []
    for rel in rels:
        sealed = rd.sealed_digest(rel)
        if sealed is None:
            out.append(f"{rel}: not sealed in {LEDGER}; the run directory is damaged")
        elif sha256_file(rd.path / rel) != sealed:
            out.append(f"{rel}: changed since it was sealed")
    return out


def trial_problems(rd: RunDir, trial_id: str) -> list[str]:
    """One trial's files against their seals and its results' artifacts against their names: what
    a trial page checks itself while its run's full verification is still to come."""
    files = trial_files(rd.trial_dir(trial_id))
    out = sealed_problems(rd, [f.relative_to(rd.path).as_posix() for f in files])
    if out:
        return out
    for n in rd.attempts_of(trial_id):
        try:
            res = rd.result(trial_id, n)
        except AssayError as e:
            return [str(e).splitlines()[0]]
        for digest in sorted(set(res.artifacts.values()) if res is not None else ()):
            p = rd.artifact_path(digest)
            if p.is_file() and sha256_file(p) != digest:
                out.append(f"{p.relative_to(rd.path).as_posix()}: its bytes are not its digest")
    return out


def build_row(path: Path, name: str, *, full: bool = True, sig: list[Any] | None = None) -> RunRow:
    """Read one run directory into its row; never raises on bad input. ``full``: run the whole
    verification first, else check only the manifest and the latest score version against their
    seals (the row is then ``verified=False``). ``sig``: the run's signature, when just read."""
    sig = sig or signature(path)
    row = RunRow(name=name, status="unreadable", signature=sig)
    try:
        rd = RunDir.open(path)
        if not (path / LEDGER).is_file():
            row.problems = [f"half-written: {MANIFEST} without {LEDGER} (the run never started, or its folder was cut)"]
            return row
        manifest = rd.manifest(check_sealed=False)  # one that does not parse is named as such, not as tampering
        running = is_running(path)
        # a run in flight is verified once it ends: mid-seal, a ledger line precedes its file by design
        files = score_files(path)
        if running or not full:
            report = None
            problems = sealed_problems(rd, [MANIFEST] + ([] if running else [
                f.relative_to(path).as_posix() for f in files[-1:]]))
        else:
            report = verify_run(path)
            problems = report.problems
        if problems:
            row.status, row.problems = "tampered", problems
            row.tampered_files = tampered_files(problems)
            return row
        row.verified = report is not None
    except (AssayError, OSError, ValueError) as e:
        row.problems = [str(e).splitlines()[0][:500]]
        return row
    row.run_id, row.created_at = manifest.run_id, manifest.created_at
    row.suite = f"{manifest.suite.get('name', '')} {manifest.suite.get('version', '')}".strip()
    row.planned = len(manifest.plan.trials)
    row.agents = [AgentLine(a.name, None, "", None) for a in manifest.agents]
    if files:
        try:
            doc = read_summary(files[-1])
        except (AssayError, OSError, ValueError) as e:
            row.status, row.problems = "unreadable", [f"{files[-1].name}: {str(e).splitlines()[0][:300]}"]
            return row
        row.score_version, row.gate = doc.score_version, doc.security.gate
        row.agents = [AgentLine(n, a.strict_rate, a.security.gate, a.efficiency.total_cost_usd, list(a.strict_ci))
                      for n, a in sorted(doc.agents.items())]
        row.suspects = len(doc.suspect_passes)
        costs = [a.cost_usd for a in row.agents if a.cost_usd is not None]
        row.cost_usd = sum(costs) if costs else None
    row.status = "running" if running else "scored" if files else "not scored"
    return row


def _from_record(data: dict[str, Any]) -> RunRow:
    data = dict(data)
    data.pop("v", None)
    data["agents"] = [AgentLine(**a) for a in data.get("agents", [])]
    return RunRow(**data)


class Catalog:
    """Every run directory under ``root`` (``root`` itself when it is one), as rows."""

    def __init__(self, root: Path):
        self.root = root
        self._rows: dict[str, RunRow] = {}
        self._lock = threading.Lock()
        self.verifier = Verifier(self._verify)
        self.found_tampered: set[str] = set()  # runs the background verification turned TAMPERED

    def run_path(self, name: str) -> Path | None:
        """The folder of the run called ``name``, never outside ``root``."""
        if (self.root / MANIFEST).is_file():
            return self.root if name == self.root.name else None
        if "/" in name or name in ("", ".", "..") or name.startswith("."):
            return None
        p = self.root / name
        return p if p.is_dir() and not p.is_symlink() else None

    def names(self) -> list[str]:
        if (self.root / MANIFEST).is_file():
            return [self.root.name]
        try:
            with os.scandir(self.root) as it:
                return sorted(e.name for e in it if e.is_dir(follow_symlinks=False) and not e.name.startswith("."))
        except OSError:
            return []

    def row(self, name: str, *, urgent: bool = False) -> RunRow | None:
        """The run's row (built from its sealed files when it is new or changed); one still to be
        verified is queued for the background verification (first, when ``urgent``: a page shows it)."""
        row = self._row(name)
        if row is not None and row.verifying:
            self.verifier.want([name], urgent=urgent)
        return row

    def _row(self, name: str, path: Path | None = None) -> RunRow | None:
        path = path or self.run_path(name)
        if path is None:
            return None
        sig = signature(path)
        kept = self._rows.get(name)
        if kept is None:
            kept = self._read_kept(path)
        running = is_running(path)
        if kept is not None and running and kept.status == "running":
            return kept  # a run in flight changes at every seal: its row is read again once it ends
        if kept is not None and kept.signature == sig and not (kept.status == "running" and not kept.verified):
            if kept.status in ("scored", "not scored"):
                kept.status = "running" if running else "scored" if kept.score_version else "not scored"
            with self._lock:
                self._rows[name] = kept
            return kept
        row = build_row(path, name, full=False, sig=sig)
        self._store(path, row)
        return row

    def rows(self) -> list[RunRow]:
        one = (self.root / MANIFEST).is_file()  # the root is itself a run, else each folder under it may be
        out = [r for n in self.names() if (r := self._row(n, self.root if one else self.root / n)) is not None]
        self.verifier.want([r.name for r in out if r.verifying])  # after the page's rows: it is not held up
        return out

    def pending(self) -> list[str]:
        """The runs whose full verification is still to come."""
        return self.verifier.pending()

    def _verify(self, name: str) -> None:
        """The background thread's one job: the full verification of a run, kept unless the run
        changed meanwhile (its newer row is verified next)."""
        path = self.run_path(name)
        if path is None:
            return
        try:
            row = build_row(path, name, full=True)
        except Exception as e:  # noqa: BLE001 - a run the checks cannot read is named, never left "verifying"
            row = RunRow(name=name, status="unreadable", signature=signature(path),
                         problems=[f"the verification could not finish: {type(e).__name__}: {str(e)[:300]}"])
        with self._lock:
            now = self._rows.get(name)
            if now is not None and now.signature != row.signature:
                return
        if row.status == "tampered":
            self.found_tampered.add(name)
        self._store(path, row)

    def _store(self, path: Path, row: RunRow) -> None:
        with self._lock:
            self._rows[row.name] = row
        if not row.verifying:  # a row still to verify is never kept: the next viewer checks it again
            self._keep(path, row)

    def refresh(self, name: str) -> RunRow | None:
        """Verify and read the run again now (the run page's "verify now")."""
        self._rows.pop(name, None)
        path = self.run_path(name)
        if path is None:
            return None
        row = build_row(path, name)
        self._store(path, row)
        return row

    @staticmethod
    def _read_kept(path: Path) -> RunRow | None:
        try:
            data = json.loads((path / REPORTS / ROW_FILE).read_text())
            if data.get("v") != ROW_VERSION:
                return None
            return _from_record(data)
        except (OSError, ValueError, TypeError, AttributeError):
            return None

    @staticmethod
    def _keep(path: Path, row: RunRow) -> None:
        if row.status == "unreadable" and not (path / MANIFEST).is_file():
            return  # not a run directory: nothing of ours is written into it
        try:
            (path / REPORTS).mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path / REPORTS, prefix=f".tmp-{ROW_FILE}")
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps(row.record()))
            os.replace(tmp, path / REPORTS / ROW_FILE)
        except OSError:
            pass  # a read-only run directory: the row lives in memory only
