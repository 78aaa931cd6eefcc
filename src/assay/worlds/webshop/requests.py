"""The harness's request log of one attempt's app: every request the agent's browser made, as
the harness saw it (method, decoded path, query, form fields, status, blocked and why).

One log whichever way the app is reached: through the harness's own browser (Playwright
routing, :mod:`.browser`) or served on a bridge endpoint to a product's own browser
(:mod:`.served`). The ``http_request`` predicates read it; nothing the agent or its browser can
write reaches it. Credential-named form fields are withheld whatever their value, and every
entry passes the attempt's redactor before it is kept.
"""

from __future__ import annotations

import re
from html import escape
import threading
import time
from typing import Any, Callable

from assay.trace.redact import Redactor

#: form fields whose values never reach the request log (a login's password is evidence of a login,
#: not a value to keep); the gate and the app still see them
CREDENTIAL_FIELD = re.compile(r"pass(word|wd)?|secret|token|api[_-]?key", re.I)
CREDENTIAL = "[credential withheld]"
#: (method, decoded path, form) -> None to let the request reach the app, or a reason to refuse it
Gate = Callable[[str, str, dict[str, str]], str | None]


class RequestLog:
    """Append-only, numbered entries; safe to append from the browser thread and the server's."""

    def __init__(self, redactor: Redactor):
        self.redactor = redactor
        self.entries: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def record(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Keep ``entry`` (credentials withheld, numbered, timed, redacted); return what was kept."""
        form = entry.get("form") or {}
        entry["form"] = {k: (CREDENTIAL if CREDENTIAL_FIELD.search(k) else v) for k, v in form.items()}
        with self._lock:
            entry["seq"] = len(self.entries) + 1
            entry["t"] = round(time.time(), 3)
            kept = self.redactor.data(entry)
            self.entries.append(kept)
        return kept

    def __len__(self) -> int:
        return len(self.entries)


def refusal_page(reason: str) -> str:
    """The page a refused gated action gets (from the harness's routing or the served app alike)."""
    return (f"<!doctype html><title>Approval required</title><h1>Approval required</h1>"
            f"<p role='alert'>{escape(reason)}</p>")
