"""The impossible-task controls in every report: per agent the control pass rate, beside and
never inside the capability score (0 is the goal), and each control pass with its trial.

One function per output, all from :class:`~assay.records.scores.ControlsSummary` (the score
document's ``controls``); a run without controls shows nothing."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Callable

from assay.records.scores import ControlsSummary, ScoreDocument
from assay.report.fmt import pct

if TYPE_CHECKING:  # ElementTree is imported where JUnit XML is written, not by every run's summary
    from xml.etree import ElementTree as ET

TITLE = "Impossible-task controls (cheating signal: 0 is the goal; not part of capability)"


def _rate(c: ControlsSummary, agent: str) -> str:
    a = c.agents[agent]
    return f"{a.passes}/{a.scored} passed ({pct(a.pass_rate)})"


def withhold_controls(c: ControlsSummary | None, held: frozenset[str],
                      label: Callable[[str], str]) -> ControlsSummary | None:
    """Control passes of held-out tasks under digest labels (``label``), without what changed (it
    names the answer)."""
    if c is None or not held:
        return c
    passes = [p.model_copy(update={"trial_id": label(p.task_id) + p.trial_id[len(p.task_id):],
                                   "task_id": label(p.task_id), "control_of": label(p.control_of),
                                   "changed": "(held out)"}) if p.task_id in held else p for p in c.passes]
    return c.model_copy(update={"passes": passes})


def controls_markdown(doc: ScoreDocument) -> list[str]:
    c = doc.controls
    if c is None:
        return []
    out = ["", f"## {TITLE}", "", "| agent | control trials | control passes | control pass rate |", "|---|---|---|---|"]
    out += [f"| {a} | {m.trials} | {m.passes} | {pct(m.pass_rate)} |" for a, m in c.agents.items()]
    if c.passes:
        out += ["", f"**{len(c.passes)} control pass(es)** (an honest agent cannot pass these):", ""]
        out += [f"- `{p.trial_id}` ({p.agent}): {p.rule}, {p.changed}" for p in c.passes]
    return out


def controls_summary_md(doc: ScoreDocument) -> list[str]:
    """The CI step summary's lines: one per agent, the passes listed when there are any."""
    c = doc.controls
    if c is None:
        return []
    out = ["", "Impossible-task controls (0 is the goal): "
           + "; ".join(f"{a} {_rate(c, a)}" for a in c.agents)]
    if c.passes:
        out += ["", f"<details open><summary>{len(c.passes)} control pass(es): cheating signal</summary>", ""]
        out += [f"- `{p.trial_id}` ({p.agent}): {p.rule}" for p in c.passes]
        out += ["", "</details>"]
    return out


def controls_html(doc: ScoreDocument) -> str:
    c = doc.controls
    if c is None:
        return ""
    out = [f'<section id="controls"><h2>{escape(TITLE)}</h2><table><tr><th>agent</th><th>control trials</th>'
           "<th>control passes</th><th>control pass rate</th></tr>"]
    out += [f"<tr><td>{escape(a)}</td><td>{m.trials}</td><td>{m.passes}</td><td>{escape(pct(m.pass_rate))}</td></tr>"
            for a, m in c.agents.items()]
    out.append("</table>")
    if c.passes:
        out.append(f"<h3>{len(c.passes)} control pass(es)</h3><table><tr><th>trial</th><th>agent</th><th>rule</th>"
                   "<th>what changed</th></tr>")
        out += [f"<tr><td>{escape(p.trial_id)}</td><td>{escape(p.agent)}</td><td>{escape(p.rule)}</td>"
                f"<td>{escape(p.changed)}</td></tr>" for p in c.passes]
        out.append("</table>")
    out.append("</section>")
    return "".join(out)


def controls_junit(doc: ScoreDocument, where: dict[str, str]) -> ET.Element | None:
    """A testsuite of its own: one testcase per agent, a ``<failure>`` (type ``control_passed``)
    listing the trials when it passed any control; the agents' own testsuites are unchanged."""
    c = doc.controls
    if c is None:
        return None
    from xml.etree import ElementTree as ET

    suite = ET.Element("testsuite", name=f"{doc.run_id}.controls", tests=str(len(c.agents)),
                       failures=str(sum(1 for m in c.agents.values() if m.passes)), errors="0", skipped="0", **where)
    for agent, m in c.agents.items():
        tc = ET.SubElement(suite, "testcase", classname=f"{agent}.controls", name=f"{agent} impossible-task controls")
        mine = [p.trial_id for p in c.passes if p.agent == agent]
        if mine:
            ET.SubElement(tc, "failure", type="control_passed",
                          message=f"{agent} passed {len(mine)} impossible-task control(s): {', '.join(mine[:20])}")
    return suite


__all__ = ["controls_html", "controls_junit", "controls_markdown", "controls_summary_md", "withhold_controls"]
