"""``assay show``'s view of a browser attempt: the harness's request log and the screenshots
kept as evidence (the request log is what the ``http_request`` predicates decided on)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from assay.cli.sanitize import safe
from assay.records.results import AttemptResult

ROWS = 60


def browser_view(r: AttemptResult) -> Table | None:
    """A table of every logged request per web world, or None when the attempt had no browser."""
    logs: dict[str, list[dict[str, Any]]] = r.extra.get("http_requests") or {}
    shots: dict[str, list[str]] = r.extra.get("screenshots") or {}
    if not any(logs.values()) and not any(shots.values()):
        return None
    t = Table(title="browser requests (recorded by the harness)")
    for col in ("world", "seq", "method", "path", "form", "status", "blocked"):
        t.add_column(col, overflow="fold")
    for world, entries in sorted(logs.items()):
        for e in entries[:ROWS]:
            form = ", ".join(f"{k}={v}" for k, v in (e.get("form") or {}).items())
            t.add_row(world, str(e.get("seq")), str(e.get("method")), safe(str(e.get("path") or e.get("url"))),
                      safe(form[:120]), str(e.get("status")), safe(e.get("reason", "")) if e.get("blocked") else "")
        if len(entries) > ROWS:
            t.add_row(world, "…", f"{len(entries) - ROWS} more", "", "", "", "")
    masked = r.extra.get("screenshot_masked") or {}
    t.caption = safe("; ".join(f"{w}: screenshots {', '.join(s)}" + (f" (masked: {', '.join(masked.get(w, []))})"
                                                               if masked.get(w) else "") for w, s in shots.items() if s))
    return t
