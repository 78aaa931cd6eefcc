"""The report's recovery section: the score document's recovery figures, printed by the same
table function as ``assay recovery`` (docs/recovery.md)."""

from __future__ import annotations

from html import escape

from assay.records.scores import ScoreDocument
from assay.score.recovery import HEADER, render_markdown, table, unclassified_note


def recovery_markdown(doc: ScoreDocument) -> list[str]:
    """Markdown lines, empty when no fault plan was run and no fault fired."""
    fig = doc.recovery
    if not fig.rows and not fig.unclassified:
        return []
    return ["", "## Recovery under faults", "", render_markdown(fig).rstrip("\n")]


def recovery_html(doc: ScoreDocument) -> str:
    """An HTML section, empty when there is nothing to show."""
    fig = doc.recovery
    if not fig.rows and not fig.unclassified:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADER)
    rows = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>" for cells in table(fig))
    note = unclassified_note(fig)
    return (f'<section id="recovery"><h2>Recovery under faults</h2><table><tr>{head}</tr>{rows}</table>'
            + (f"<p>{escape(note)}</p>" if note else "") + "</section>")
