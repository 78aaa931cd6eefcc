"""``assay import traces``: production traces in, redacted and deduplicated candidate cases out.

Per trace: read (one reader per format) -> redact every field that is kept -> key on what the
case *is* (normalised prompt, the corrected calls, the correction) -> a new candidate with a
draft task, or one more source on the candidate that already has that key. The raw file is
never copied: only its digest is recorded.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from assay.cases.bound import bounded
from assay.cases.draft import apply_correction, draft_task, task_yaml
from assay.cases.read_jsonl import read_jsonl
from assay.cases.read_langfuse import read_langfuse
from assay.cases.read_otel import read_otel
from assay.cases.scrub import Scrubber
from assay.cases.store import CANDIDATES, DRAFT, CasesDir
from assay.cases.traces import ImportedTrace, TraceFormatError
from assay.errors import UsageError
from assay.spec.digest import sha256_bytes, sha256_file, sha256_json

READERS: dict[str, Callable[[Path], list[ImportedTrace]]] = {"otel": read_otel, "langfuse": read_langfuse,
                                                              "jsonl": read_jsonl}


@dataclass
class ImportReport:
    file: str
    format: str
    traces: int = 0
    new: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)  # candidate ids that gained a source (duplicates folded in)
    merged_traces: int = 0  # traces folded into a candidate as one more source
    already: int = 0  # traces already recorded as a source
    cut: list[dict[str, Any]] = field(default_factory=list)  # what the bounds cut, per trace ({trace_id, cuts})


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def scrubbed(t: ImportedTrace, scrub: Scrubber) -> ImportedTrace:
    """A copy of the trace with every kept field redacted."""
    return ImportedTrace(
        trace_id=scrub.text(t.trace_id), format=t.format, prompt=scrub.text(t.prompt) if t.prompt else None,
        messages=scrub.data(t.messages), tool_calls=scrub.data(t.tool_calls),
        output=scrub.text(t.output) if t.output else None, correction=scrub.data(t.correction),
        source_task=t.source_task, category=t.category, verdict=t.verdict)


def case_key(t: ImportedTrace) -> str:
    """What the case is: its normalised prompt, corrected calls and correction. A trace without a
    prompt (assay's own export carries none) cannot be shown to be the same case as another, so
    it is keyed on its source task and its own id: it never merges with another trace."""
    calls, _ = apply_correction(t.tool_calls, t.correction)
    key: dict[str, Any] = {"prompt": normalise(t.prompt or ""), "calls": [[c["name"], c["arguments"]] for c in calls],
                           "correction": t.correction}
    if not (t.prompt or "").strip():
        key.update({"no_prompt": True, "task": t.source_task, "trace": t.trace_id})
    return sha256_json(key)


def _new_candidate(cases: CasesDir, cid: str, key: str, t: ImportedTrace, source: dict[str, Any],
                   redaction: dict[str, Any]) -> None:
    task, prompt, todo = draft_task(t, [t.trace_id])
    root = cases.path / CANDIDATES
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".new-") as tmp:
        stage = Path(tmp) / cid
        (stage / DRAFT / "workspace").mkdir(parents=True)
        (stage / DRAFT / "workspace" / ".keep").write_text("")
        (stage / DRAFT / "task.yaml").write_text(task_yaml(task))
        (stage / DRAFT / "prompt.md").write_text(prompt if prompt.endswith("\n") else prompt + "\n")
        if (root / cid).exists():  # a killed import left a draft without its candidate.json
            shutil.rmtree(root / cid)
        stage.rename(root / cid)
    cand = {"id": cid, "key": key, "status": "pending", "sources": [source],
            "prompt_sha256": sha256_bytes((t.prompt or "").encode()),
            "observed": {"tool_calls": t.tool_calls, "output": t.output, "verdict": t.verdict,
                         "source_task": t.source_task, "messages": len(t.messages)},
            "correction": t.correction, "redaction": redaction, "todo": todo,
            "generated_draft_sha256": cases.draft_digest(cid), "review": None, "promotion": None}
    cases.write(cand)


def import_traces(path: Path, fmt: str, cases_dir: Path, *, secrets: dict[str, str] | None = None) -> ImportReport:
    """Read ``path`` as ``fmt`` and write candidate cases under ``cases_dir``."""
    if fmt not in READERS:
        raise UsageError(f"--format must be one of {sorted(READERS)}, not {fmt!r}")
    if not path.is_file():
        raise UsageError(f"{path}: trace file not found")
    traces = READERS[fmt](path)  # parse everything first: a bad file writes nothing
    empty = [t.trace_id for t in traces if not (t.prompt or t.messages or t.tool_calls or t.output)]
    if traces and len(empty) == len(traces):
        raise TraceFormatError(f"{path}: read as --format {fmt}, no trace has a prompt, a message, a tool call or "
                               f"an output (e.g. {empty[0]!r}): this is not a {fmt} export; nothing written")
    cases = CasesDir(cases_dir)
    report = ImportReport(file=str(path), format=fmt, traces=len(traces))
    file_digest = sha256_file(path)
    existing = {c["id"]: c for c in cases.candidates()}
    known = {c["key"]: cid for cid, c in existing.items()}
    changed: set[str] = set()
    for raw in traces:
        scrub = Scrubber(dict(secrets or {}))
        t, cuts = bounded(scrubbed(raw, scrub))
        key = case_key(t)
        source = {"trace_id": t.trace_id, "format": fmt, "file_sha256": file_digest, **({"cut": cuts} if cuts else {})}
        if cuts:
            report.cut.append({"trace_id": t.trace_id, "cuts": cuts})
        cid = known.get(key)
        if cid is None:
            cid = "c-" + key[:12]
            _new_candidate(cases, cid, key, t, source, scrub.record())
            existing[cid] = cases.read(cid)
            known[key] = cid
            report.new.append(cid)
            continue
        cand = existing[cid]
        if any(s["trace_id"] == t.trace_id for s in cand["sources"]):
            report.already += 1
            continue
        cand["sources"].append(source)
        report.merged_traces += 1
        changed.add(cid)
        if cid not in report.merged:
            report.merged.append(cid)
    for cid in sorted(changed):  # one write per candidate that gained sources
        cases.write(existing[cid])
    cases.log("import", file=str(path), file_sha256=file_digest, format=fmt, traces=len(traces), new=report.new,
              merged=report.merged, already=report.already)
    return report

