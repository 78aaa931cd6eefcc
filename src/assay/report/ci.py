"""CI outputs: a JUnit XML projection of the trials and a Markdown step summary.

JUnit: one ``<testcase>`` per trial (``classname`` = agent.task, ``name`` = the trial id); an agent
failure or timeout is a ``<failure>``, an infrastructure error (a planned trial without result
included) an ``<error>``, a skipped trial ``<skipped>``. A comparison adds one testcase per
``--fail-if`` check, and each agent's security gate is a testcase of its own (``<failure>`` when
FAILED, listing the failing incidents), so a CI view that only counts test cases sees it. Each
testsuite carries ``timestamp`` (when the run started) and ``hostname`` (the host writing the
file; the run manifest keeps only a digest of the run's host). The Markdown summary puts what a reviewer needs first: the gate, the flipped
tasks, the headline, then the rest; ``GITHUB_STEP_SUMMARY`` is appended to when set.
"""

from __future__ import annotations

import os
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from assay.records.scores import ScoreDocument, TrialScore
from assay.records.trial_file import iter_trials
from assay.report.fmt import delta_interval, pct, signed
from assay.report.heldout import withhold, withhold_comparison
from assay.untrusted.shown import one_line

# ElementTree, the controls' and the Markdown renderers are imported where a JUnit file or a summary
# is written, not by every run that asked for neither
if TYPE_CHECKING:
    from xml.etree import ElementTree as ET

    from assay.records.comparison import Comparison
    from assay.store.rundir import RunDir

FAILURE_STATES = ("fail", "timeout")
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def _testcase(t: TrialScore, suspect: list[dict[str, str]] | None = None) -> ET.Element:
    from xml.etree import ElementTree as ET

    tc = ET.Element("testcase", classname=f"{t.agent}.{t.task_id}", name=t.trial_id, time=f"{t.wall_s:.3f}")
    if suspect:  # still a pass: shown, never counted as a failure
        props = ET.SubElement(tc, "properties")
        # the path is the agent's: one line, control characters (which XML forbids) as escapes
        ET.SubElement(props, "property", name="assay.suspect", value="; ".join(
            f"{f.get('rule')}: {one_line(f.get('path', ''))}" for f in suspect[:10]))
    why = f"{t.end_state}" + (f" ({t.reason})" if t.reason else "") + (" host_contended" if t.host_contended else "")
    if t.end_state in FAILURE_STATES:
        ET.SubElement(tc, "failure", message=why, type=t.end_state).text = (
            f"strict pass: no; diagnostic {t.diagnostic:.1f}; attempts {t.attempts}")
    elif t.end_state == "infra_error":
        ET.SubElement(tc, "error", message=why, type="infra_error").text = (
            f"infrastructure error after {t.attempts} attempt(s); counted as a failure in the strict rate")
    elif t.end_state == "skipped":
        ET.SubElement(tc, "skipped", message=why)
    return tc


def _gate_case(doc: ScoreDocument, agent: str) -> ET.Element:
    """The agent's security gate as a testcase: a FAILED gate is a failure, never only a figure."""
    from xml.etree import ElementTree as ET

    tc = ET.Element("testcase", classname=f"{agent}.security", name="security gate", time="0.000")
    m = doc.agents.get(agent)
    if m is not None and m.security.gate == "FAILED":
        incs = m.security.incidents
        ET.SubElement(tc, "failure", message=f"security gate FAILED: {len(incs)} failing incident(s)",
                      type="security_gate").text = "\n".join(
            f"{i.type} ({i.severity}) in {i.trial_id or '?'} attempt {i.attempt or '?'}: {one_line(i.summary)}"
            for i in incs)
    return tc


def _stamp(at: float) -> str:
    """JUnit's timestamp: ISO 8601 without a zone (the schema has none), in UTC."""
    return datetime.fromtimestamp(at, tz=timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds")


def junit_xml(doc: ScoreDocument, cmp: Comparison | None = None, *, started_at: float | None = None,
              hostname: str | None = None) -> str:
    """The JUnit XML document (one testsuite per agent with its security gate, plus one for the
    comparison's checks). ``started_at`` defaults to the scoring time, ``hostname`` to this host."""
    from xml.etree import ElementTree as ET

    from assay.report.controls import controls_junit

    root = ET.Element("testsuites", name=f"assay {doc.run_id}")
    where = {"timestamp": _stamp(doc.scored_at if started_at is None else started_at),
             "hostname": hostname if hostname is not None else (platform.node() or "localhost")}
    by_agent: dict[str, list[TrialScore]] = {}
    for t in iter_trials(doc):
        by_agent.setdefault(t.agent, []).append(t)
    for agent, trials in sorted(by_agent.items()):
        gate = _gate_case(doc, agent)
        suite = ET.SubElement(root, "testsuite", name=f"{doc.run_id}.{agent}", tests=str(len(trials) + 1),
                              failures=str(sum(t.end_state in FAILURE_STATES for t in trials)
                                           + (gate.find("failure") is not None)),
                              errors=str(sum(t.end_state == "infra_error" for t in trials)),
                              skipped=str(sum(t.end_state == "skipped" for t in trials)),
                              time=f"{sum(t.wall_s for t in trials):.3f}", **where)
        suspects = {s.trial_id: s.flags for s in doc.suspect_passes}
        suite.extend(_testcase(t, suspects.get(t.trial_id)) for t in trials)
        suite.append(gate)
    if (ctl := controls_junit(doc, where)) is not None:
        root.append(ctl)
    if cmp is not None:
        checks = ET.SubElement(root, "testsuite", name=f"compare {cmp.baseline.run_id} -> {cmp.candidate.run_id}",
                               tests=str(len(cmp.checks) + 1), failures=str(sum(c.tripped for c in cmp.checks)),
                               errors="1" if cmp.nothing_to_compare else "0", skipped="0", **where)
        shared = ET.SubElement(checks, "testcase", classname="compare", name="shared units")
        if cmp.nothing_to_compare:
            ET.SubElement(shared, "error", message=cmp.nothing_to_compare, type="nothing_to_compare")
        for c in cmp.checks:
            tc = ET.SubElement(checks, "testcase", classname="compare.fail_if", name=f"{c.threshold} ({c.scope})")
            if c.tripped:
                ET.SubElement(tc, "failure", message=c.why, type="threshold")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _gate_lines(doc: ScoreDocument, cmp: Comparison | None) -> list[str]:
    out = [f"**Security gate: {doc.security.gate}**"
           + (f" ({len(doc.security.incidents)} failing incident(s))" if doc.security.incidents else "")]
    if cmp is not None:
        if cmp.nothing_to_compare:
            out.append(f"**Compare: NOTHING COMPARED** ({cmp.nothing_to_compare})")
        elif cmp.failed:
            out.append("**CI gate: FAILED**: " + "; ".join(cmp.failed))
        else:
            out.append("**CI gate: passed**" + (f" ({', '.join(cmp.thresholds)})" if cmp.thresholds else
                                                 " (no --fail-if threshold given)"))
    return out


def _flip_lines(cmp: Comparison | None) -> list[str]:
    if cmp is None or not cmp.flipped:
        return []
    out = ["", "### Flipped tasks", "", "| task | variant | agent | baseline | candidate | |", "|---|---|---|---|---|---|"]
    out += [f"| {f.task} | {f.variant} | {f.agent} | {pct(f.baseline)} | {pct(f.candidate)} | {f.direction} |"
            for f in cmp.flipped]
    return out


def _compare_lines(cmp: Comparison | None) -> list[str]:
    if cmp is None or cmp.nothing_to_compare:
        return []
    out = ["", f"### Compare {cmp.baseline.run_id} -> {cmp.candidate.run_id}", "",
           f"{cmp.shared_units} shared units (paired by {cmp.paired_by}), {len(cmp.left_out)} left out.", "",
           "| metric | baseline | candidate | delta | 95% CI | beyond noise |", "|---|---|---|---|---|---|"]
    for name, m in cmp.metrics.items():
        out.append(f"| {name} | {signed(m.baseline, '.4g')} | {signed(m.candidate, '.4g')} | {signed(m.delta)} "
                   f"| {delta_interval(m)} | {m.direction or 'no'} |")
    return out


def summary_markdown(doc: ScoreDocument, cmp: Comparison | None = None) -> str:
    """Markdown for a CI step summary or a PR comment: headline, gate, flipped tasks first."""
    from assay.report.controls import controls_summary_md
    from assay.report.markdown import flag_lines, flag_summary, headline_table, measured_line

    out = []
    if doc.isolation.warning:
        out += [f"> **{doc.isolation.warning}**", ""]
    out += [f"## assay: run {doc.run_id}", "", measured_line(doc.measured), ""]
    flags = flag_lines(doc)
    out += flags + ([""] if flags else [])
    out += _gate_lines(doc, cmp)
    out += _flip_lines(cmp)
    out += ["", *headline_table(doc)]
    failing = [t for t in iter_trials(doc) if t.end_state != "pass" and t.end_state != "skipped"]
    if failing:
        out += ["", f"<details><summary>{len(failing)} trial(s) not passed</summary>", ""]
        out += [f"- `{t.trial_id}` {t.end_state}" + (f" ({t.reason})" if t.reason else "") for t in failing]
        out += ["", "</details>"]
    if doc.suspect_passes:
        out += ["", f"<details><summary>{len(doc.suspect_passes)} suspect pass(es) (still passes)</summary>", ""]
        out += [f"- `{s.trial_id}` {flag_summary(s.flags)}" for s in doc.suspect_passes]
        out += ["", "</details>"]
    out += controls_summary_md(doc)
    out += _compare_lines(cmp)
    for a, m in sorted(doc.agents.items()):
        if not m.scored:
            out.append(f"\n{a}: zero scored trials: no strict rate and no interval")
    return "\n".join(out) + "\n"


def run_started(run_dir: Path | RunDir) -> float | None:
    """When the run began (its manifest's ``created_at``), for JUnit's timestamp; None if unreadable."""
    from assay.store.rundir import RunDir

    try:
        return RunDir.open(run_dir).manifest(check_sealed=False).created_at
    except Exception:  # noqa: BLE001 - a timestamp is never worth failing the CI outputs for
        return None


def write_ci_outputs(doc: ScoreDocument, cmp: Comparison | None = None, *, junit: Path | None = None,
                     summary_md: Path | None = None, held: frozenset[str] = frozenset(),
                     started_at: float | None = None) -> list[Path]:
    """Write the JUnit file and the Markdown summary asked for, and append the summary to
    ``$GITHUB_STEP_SUMMARY`` when it is set. Returns the files written. The ``held`` (held-out)
    tasks' trials stay test cases, named by digests (:mod:`assay.report.heldout`)."""
    doc, cmp = withhold(doc, held, keep_trials=True), withhold_comparison(cmp, held)
    written = []
    if junit is not None:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_text(junit_xml(doc, cmp, started_at=started_at), encoding="utf-8")
        written.append(junit)
    text = None
    if summary_md is not None:
        text = summary_markdown(doc, cmp)
        summary_md.parent.mkdir(parents=True, exist_ok=True)
        summary_md.write_text(text, encoding="utf-8")
        written.append(summary_md)
    step = os.environ.get(STEP_SUMMARY_ENV)
    if step:
        with open(step, "a", encoding="utf-8") as f:
            f.write(text if text is not None else summary_markdown(doc, cmp))
        written.append(Path(step))
    return written
