"""The report's section on how tasks were read: per task, what an import approximated and what
could not map (the manifest's ``deviations``, carried into the score document), one table
function for the Markdown and HTML reports (the JSON report holds the score document's field)."""

from __future__ import annotations

from html import escape

from assay.records.scores import ScoreDocument

HEADER = ("task", "kind", "what")
COULD_NOT_MAP = "could not map: "


def deviation_rows(doc: ScoreDocument) -> list[tuple[str, str, str]]:
    """(task, ``approximated`` or ``could not map``, the text), in task order."""
    rows = []
    for task in sorted(doc.deviations):
        for d in doc.deviations[task]:
            if d.startswith(COULD_NOT_MAP):
                rows.append((task, "could not map", d[len(COULD_NOT_MAP):]))
            else:
                rows.append((task, "approximated", d))
    return rows


def _title(rows: list[tuple[str, str, str]]) -> str:
    n = len({r[0] for r in rows})
    return f"How tasks were read ({n} task(s) with deviations from their source)"


def deviations_markdown(doc: ScoreDocument) -> list[str]:
    """Markdown lines, empty when every task was read as declared."""
    rows = deviation_rows(doc)
    if not rows:
        return []
    cell = lambda v: v.replace("|", "\\|").replace("\n", " ")  # noqa: E731
    return ["", f"## {_title(rows)}", "", "| " + " | ".join(HEADER) + " |", "|---|---|---|",
            *(f"| {cell(t)} | {k} | {cell(w)} |" for t, k, w in rows)]


def deviations_html(doc: ScoreDocument) -> str:
    """An HTML section, empty when every task was read as declared."""
    rows = deviation_rows(doc)
    if not rows:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<section id="deviations"><h2>{escape(_title(rows))}</h2><table><tr>{head}</tr>{body}</table></section>'
