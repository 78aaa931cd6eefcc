"""The suite audit as one self-contained HTML page, from the same table and evidence as its
Markdown (:class:`assay.run.audit.AuditReport`); every value is escaped: task ids, evidence and
test output come from the tasks and their runs."""

from __future__ import annotations

from html import escape

from assay.run.audit import TABLE_HEADER, AuditReport

_CSS = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}"
        ".valid{color:#1a7f37}.weak,.needs,.image{color:#9a6700}.unsolvable,.no{color:#cf222e}"
        "li{white-space:pre-wrap;word-break:break-word}")


def _label_class(label: str) -> str:
    return escape(label.split()[0])


def audit_html(report: AuditReport) -> str:
    """The whole page: the counts, the per-task table (each task linking to its evidence), the evidence."""
    title = f"Audit of {report.suite} {report.version}"
    head = "".join(f"<th>{escape(h)}</th>" for h in TABLE_HEADER)
    with_details = {t.task_id for t in report.tasks if t.evidence or t.needs}
    rows = []
    for t, row in zip(report.tasks, report.table()):
        first = (f'<a href="#task-{escape(t.task_id)}">{escape(row[0])}</a>' if t.task_id in with_details
                 else escape(row[0]))
        rows.append(f"<tr><td>{first}</td><td class=\"{_label_class(t.label)}\">{escape(row[1])}</td>"
                    + "".join(f"<td>{escape(c)}</td>" for c in row[2:]) + "</tr>")
    details = []
    for t, (heading, lines) in zip([t for t in report.tasks if t.task_id in with_details], report.details()):
        items = "".join(f"<li>{escape(line)}</li>" for line in lines)
        details.append(f'<section id="task-{escape(t.task_id)}"><h2>{escape(heading)}</h2><ul>{items}</ul></section>')
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
            f"<h1>{escape(title)}</h1><p>{escape(report.summary())}</p>"
            f"<table><tr>{head}</tr>{''.join(rows)}</table>{''.join(details)}</body></html>\n")
