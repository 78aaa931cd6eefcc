"""A browser attempt in the HTML report: the harness's request log and the screenshots kept as
evidence, embedded (the report stays one self-contained file; secrets were masked when taken)."""

from __future__ import annotations

import base64
from html import escape

from assay.records.results import AttemptResult
from assay.store.rundir import RunDir

ROWS = 200
SHOTS = 3  # the last few per attempt: the end screenshot and what led to it


def browser_html(rd: RunDir, res: AttemptResult) -> str:
    logs = res.extra.get("http_requests") or {}
    if not any(logs.values()):
        return ""
    out = ["<h4>browser requests (recorded by the harness)</h4><table><tr><th>world</th><th>seq</th><th>method</th>"
           "<th>path</th><th>form</th><th>status</th><th>blocked</th></tr>"]
    for world, entries in sorted(logs.items()):
        for e in entries[:ROWS]:
            form = ", ".join(f"{k}={v}" for k, v in (e.get("form") or {}).items())
            out.append(f"<tr><td>{escape(world)}</td><td>{e.get('seq')}</td><td>{escape(str(e.get('method')))}</td>"
                       f"<td>{escape(str(e.get('path') or e.get('url')))}</td><td>{escape(form[:200])}</td>"
                       f"<td>{escape(str(e.get('status')))}</td>"
                       f"<td class=\"{'bad' if e.get('blocked') else ''}\">{escape(str(e.get('reason', '')) if e.get('blocked') else '')}</td></tr>")
    out.append("</table>")
    for name in report_shots(res):
        data = base64.b64encode(rd.read_artifact(res.artifacts[name])).decode()
        out.append(f'<figure><img alt="{escape(name)}" style="max-width:480px;border:1px solid #ccc" '
                   f'src="data:image/png;base64,{data}"><figcaption>{escape(name)}</figcaption></figure>')
    return "".join(out)


def report_shots(res: AttemptResult) -> list[str]:
    """The screenshots an attempt's section shows (the viewer shows the others beside them)."""
    return sorted(n for n in res.artifacts if n.endswith(".png") and ".shot-" in n)[-SHOTS:]
