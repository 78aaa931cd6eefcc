"""Build a report (HTML, Markdown or JSON) for a run, optionally compared with another run."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Literal

from assay.errors import UsageError
from assay.records.comparison import REPORT_SCHEMA, Comparison, ReportDocument
from assay.records.json_out import pretty_json
from assay.records.scores import ScoreDocument, TrialsFile
from assay.records.trial_file import TRIALS_SUFFIX, TrialWriter, iter_trials, trials_path
from assay.report.heldout import withheld_note, withhold, withhold_comparison, withhold_judges
from assay.score.compare import Threshold, compare_agents, compare_scores
from assay.score.engine import score_figures, scored_to_side_file
from assay.spec.judge import JudgeSummary
from assay.store.rundir import REPORTS, RunDir

Format = Literal["html", "md", "json"]
FORMATS = ("html", "md", "json")
#: metrics shown agent against agent: every pair of agents costs one paired bootstrap per metric
#: (about 0.8 s per pair at 1000 shared tasks on a loaded 2-core machine), so only the headline rate
AGENT_METRICS = ("strict_rate",)


def report_document(doc: ScoreDocument, cmp: Comparison | None = None,
                    judges: list[JudgeSummary] | None = None) -> ReportDocument:
    """The stable machine interface: the isolation note first, the score document, the comparison
    with a baseline run, the paired differences between the run's own agents, and its judges."""
    return ReportDocument(isolation=doc.isolation, score=doc, compare=cmp,
                          agents_compared=compare_agents(doc, metrics=AGENT_METRICS), judges=judges or [])


def run_judges(rd: RunDir) -> list[JudgeSummary]:
    """The run's judges; a run without a judge model had none (and its results are not read again)."""
    if rd.manifest().judge is None:
        return []
    from assay.judge.summary import judge_summaries

    return judge_summaries(rd.iter_results())


def report_json(doc: ScoreDocument, cmp: Comparison | None = None) -> dict:
    """The report document as JSON-ready data (``assay.report/1``)."""
    return report_document(doc, cmp).dump()


def build_report(run_dir: Path | str, fmt: str = "html", *, compare: Path | str | None = None,
                 agent_map: dict[str, str] | None = None, allow_suite_change: bool = False) -> str:
    """Score ``run_dir`` (integrity first) and render it; ``compare`` is the baseline run. The
    JSON holds its trial rows inline here (a report written to a file has them in a side file)."""
    with tempfile.TemporaryDirectory(prefix="assay-report-") as tmp:
        return _build(run_dir, fmt, Path(tmp), None, compare=compare, agent_map=agent_map,
                      allow_suite_change=allow_suite_change)


def _json_rows(doc: ScoreDocument, target: Path | None) -> ScoreDocument:
    """The rows as the JSON report carries them: a side file beside ``target``, else inline."""
    if target is None:
        return doc.model_copy(update={"trials": list(iter_trials(doc)), "trials_file": None})
    side = target.with_name(target.name.removesuffix(".json") + TRIALS_SUFFIX)
    source = trials_path(doc)
    if doc.row_filter is None and source is not None and doc.trials_file is not None:
        # nothing withheld: the score's own rows as they are (with the evidence each was scored
        # from), not decoded and encoded again (765 MB at 10^6 trials): moved into place when they
        # were written beside it (write_report scores into the target's folder), with the digest
        # the writer took of the bytes it wrote; else copied, hashed as copied
        try:
            os.replace(source, side)
            digest = doc.trials_file.sha256
        except OSError:  # another file system: copied
            digest = _copy_hashed(source, side)
        info = TrialsFile(path=side.name, rows=doc.trials_file.rows, sha256=digest)
        return doc.model_copy(update={"trials": [], "trials_file": info}).located(target.parent)
    writer = TrialWriter(side)
    for row in iter_trials(doc):
        writer.write(row)
    info = TrialsFile(path=side.name, rows=writer.rows, sha256=writer.close())
    return doc.model_copy(update={"trials": [], "trials_file": info}).located(target.parent)


def _copy_hashed(source: Path, target: Path) -> str:
    """Copy ``source`` to ``target``; the SHA-256 of the bytes copied."""
    h = hashlib.sha256()
    with open(source, "rb") as src, open(target, "wb") as dst:
        while chunk := src.read(1 << 20):
            h.update(chunk)
            dst.write(chunk)
    return h.hexdigest()


def _build(run_dir: Path | str, fmt: str, tmp: Path, json_target: Path | None, *, compare: Path | str | None,
           agent_map: dict[str, str] | None, allow_suite_change: bool) -> str:
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    # the baseline's figures first: nothing of this run (its manifest, its log's index) is held meanwhile
    base = score_figures(compare) if compare is not None else None
    rd = RunDir.open(run_dir)
    doc = scored_to_side_file(rd, tmp)  # the same RunDir: its log is indexed once for the trial sections
    cmp = None
    if base is not None:
        cmp = compare_scores(base, doc, agent_map=agent_map, allow_suite_change=allow_suite_change)
    held = rd.manifest().held_out_ids()
    note = withheld_note(doc, held)
    doc = withhold(doc, held)  # held-out tasks count in the figures; their details and ids are never shown
    report = report_document(doc, withhold_comparison(cmp, held), withhold_judges(run_judges(rd), held))
    if fmt == "json":
        shown = report.model_copy(update={"score": _json_rows(doc, json_target)})
        return pretty_json(shown.dump()).decode()
    if fmt == "md":
        from assay.report.markdown import render_markdown

        return render_markdown(doc, report.compare, report.agents_compared, report.judges) + (f"\n{note}\n" if note else "")
    from assay.report.html import render_html

    return render_html(doc, rd, report.compare, report.agents_compared, report.judges, note=note)


def write_report(run_dir: Path | str, fmt: str = "html", *, out: Path | str | None = None,
                 compare: Path | str | None = None, agent_map: dict[str, str] | None = None,
                 allow_suite_change: bool = False) -> Path:
    """Write the report to ``out`` (default ``RUN_DIR/reports/report.<ext>``; reports are derived
    files); a JSON report's trial rows go to the side file beside it (``report.trials.jsonl``).
    A path that is not a run directory is refused before any folder is made, and the report
    replaces ``out`` whole or not at all."""
    RunDir.open(run_dir)  # a mistyped path is said, not given a reports/ folder
    target = Path(out) if out is not None else Path(run_dir) / REPORTS / f"report.{fmt}"
    _make_folder(target)
    # the score's rows are written beside the report (never a tmpfs /tmp: 765 MB at 10^6 trials),
    # and a JSON report's side file is moved into place from there, not copied
    try:
        holder = tempfile.TemporaryDirectory(prefix=".assay-report-", dir=target.parent)
    except OSError as e:
        raise UsageError(f"{target}: cannot be written ({e.strerror}); fix: --out a file path in a folder "
                         "you can write") from None
    with holder as tmp:
        text = _build(run_dir, fmt, Path(tmp), target if fmt == "json" else None, compare=compare,
                      agent_map=agent_map, allow_suite_change=allow_suite_change)
    part = target.with_name(f".{target.name}.part")
    try:
        part.write_text(text, encoding="utf-8")
        os.replace(part, target)
    except OSError as e:
        part.unlink(missing_ok=True)
        raise UsageError(f"{target}: cannot be written ({e.strerror}); fix: --out a file path in a folder "
                         "you can write") from None
    return target


def _make_folder(target: Path) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{target}: its folder {target.parent} cannot be made ({e.strerror}: a file stands on "
                         "the way or it is not writable); fix: --out a path in a folder") from None


__all__ = ["FORMATS", "REPORT_SCHEMA", "Threshold", "build_report", "report_document", "report_json", "write_report"]
