"""The report's judge section: each LLM judge's calibration figures next to the verdicts it gave
in this run, and a length-bias plot of those verdicts (preference against answer length).

Every figure comes from :class:`~assay.spec.judge.JudgeSummary` (``assay.judge.summary``), the
same object the JSON report carries; HTML and Markdown only lay it out. No answer text is shown:
what the agent wrote stays in its trial's section."""

from __future__ import annotations

from html import escape

from assay.report import plots
from assay.report.figures import Point
from assay.report.fmt import num, pct
from assay.report.heldout import is_label
from assay.report.trials import anchor
from assay.spec.judge import JudgeSummary

#: (label, Agreement field) in the order the issue and docs/judge.md name them
FIGURES = (("items", "items"), ("Cohen's kappa", "cohen_kappa"), ("Krippendorff's alpha", "krippendorff_alpha"),
           ("human vs human kappa", "human_kappa"), ("TPR", "tpr"), ("TNR", "tnr"), ("flip rate", "flip_rate"),
           ("length bias, judge (rho)", "length_bias_judge"), ("length bias, humans (rho)", "length_bias_human"))


def title(s: JudgeSummary) -> str:
    return f"{s.judge} v{s.version} · model {s.model} · {s.mode}"


def calibration_text(s: JudgeSummary) -> str:
    """'calibrated', or every uncalibrated state seen: its verdicts did not count."""
    return ", ".join(s.calibration)


def figure_rows(s: JudgeSummary) -> list[tuple[str, str]]:
    """The calibration's agreement figures, then this run's verdict counts and length bias."""
    rows: list[tuple[str, str]] = []
    ag = s.agreement.model_dump() if s.agreement is not None else {}
    for label, key in FIGURES:
        v = ag.get(key)
        rows.append((f"calibration: {label}", "n/a" if v is None else (str(v) if key == "items" else num(v, ".3f"))))
    uncounted = len(s.verdicts) - s.counted
    rows += [("verdicts in this run", str(len(s.verdicts))),
             ("counted (calibrated)", f"{s.counted}, held {s.held} ({pct(s.held / s.counted if s.counted else None)})"),
             ("shown as uncalibrated (not counted)", str(uncounted)),
             ("length bias in this run (rho)", num(s.length_rho, ".3f"))]
    return rows


def _plot(s: JudgeSummary, n: int) -> str:
    points = [Point(f"{v.task_id} · {v.agent}{'' if v.counted else ' (uncalibrated)'}", float(v.answer_chars), p,
                        href=None if is_label(v.task_id) else "#" + anchor("trial", v.trial_id))  # held out: no section
              for v in s.verdicts if v.answer_chars is not None and (p := s.preference(v)) is not None]
    return plots.scatter(f"judge-length-{n}", f"{s.judge}: preference vs answer length", points,
                       xlabel="answer length (characters)", ylabel="judge's preference (0..1)")


def judges_html(judges: list[JudgeSummary]) -> str:
    if not judges:
        return ""
    out = ["<h2 id='judges'>Judges</h2>"]
    for n, s in enumerate(judges):
        warn = "" if s.calibration == ["calibrated"] else " class='warn'"
        out.append(f"<h3>{escape(title(s))}</h3><p{warn}>calibration: {escape(calibration_text(s))}</p>")
        out.append("<table>" + "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in figure_rows(s))
                   + "</table>")
        out.append(f"<div class='figs'><div>{_plot(s, n)}</div></div>")
    return "".join(out)


def judges_md(judges: list[JudgeSummary]) -> list[str]:
    out: list[str] = []
    for s in judges:
        out += ["", f"## Judge: {title(s)}", "", f"Calibration: **{calibration_text(s)}**", "",
                "| figure | value |", "|---|---|"]
        out += [f"| {k} | {v} |" for k, v in figure_rows(s)]
    return out


__all__ = ["judges_html", "judges_md"]
