"""The agent's browser: one headless Chromium per attempt, driven by Playwright from its own
thread, its every request answered by the harness (never by a network).

Every request the page makes is intercepted here, on the harness side: a request for the app's
origin is handed to the app in-process (after the ``gate`` had its say), anything else is
aborted. Each one is written to the request log (method, path, form fields, status, blocked and
why) before the page sees an answer: that log, not the page and not any file the agent can
write, is what the ``http_request`` predicates read.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qsl, unquote, urljoin, urlsplit

from assay.worlds.webshop.chromium import LAUNCH_ARGS, ORIGIN, ORIGIN_HOST, launcher, pid_of
from assay.worlds.webshop.requests import Gate, RequestLog, refusal_page

ACTION_TIMEOUT_MS = 5000
JOB_TIMEOUT_S = 30.0
TEXT_LIMIT = 6000
MAX_REDIRECTS = 5
CONTROLS_JS = """els => els.map(e => ({tag: e.tagName.toLowerCase(), name: e.name || null, id: e.id || null,
  type: e.type || null, text: (e.innerText || e.value || '').trim().slice(0, 60) || null}))"""


class Browser:
    """Owns the Playwright thread; :meth:`run` executes one action there and waits for it."""

    def __init__(self, asgi: Any, root: Path, log: RequestLog, gate: Gate):
        self.asgi = asgi
        self.root = root
        self.gate = gate
        self.log = log
        self.requests = log.entries
        self.shots: list[Path] = []
        self.masked: set[str] = set()
        self._jobs: queue.Queue[tuple[Callable[[], Any], queue.Queue[tuple[bool, Any]]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self.page: Any = None
        self.dialog_choice = "dismiss"
        self.dialogs: list[dict[str, Any]] = []
        self.location = ""  # the page's address after the redirects the harness followed

    # ------------------------------------------------------------------ thread
    def _main(self) -> None:
        from playwright.sync_api import sync_playwright
        from starlette.testclient import TestClient

        try:
            with sync_playwright() as pw, TestClient(self.asgi, base_url=ORIGIN) as client:
                browser = pw.chromium.launch(executable_path=str(launcher(self.root / "chromium")),
                                             args=list(LAUNCH_ARGS), headless=True)
                ctx = browser.new_context(accept_downloads=False, service_workers="block",
                                          viewport={"width": 1024, "height": 768})
                ctx.set_default_timeout(ACTION_TIMEOUT_MS)
                self.page = ctx.new_page()
                self.page.route("**/*", lambda route: self._answer(route, client))
                self.page.on("dialog", self._on_dialog)
                self._ready.set()
                while (job := self._jobs.get()) is not None:
                    fn, reply = job
                    try:
                        reply.put((True, fn()))
                    except Exception as e:  # noqa: BLE001 - handed back to the caller
                        reply.put((False, e))
                browser.close()
        except BaseException as e:  # noqa: BLE001 - reported to the first caller
            self._failure = e
            self._ready.set()

    def run(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the browser thread (starting Chromium on first use) and return its value."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._main, name="assay-browser", daemon=True)
            self._thread.start()
            self._ready.wait(JOB_TIMEOUT_S)
        if self._failure is not None or self.page is None:
            raise RuntimeError(f"the browser did not start: {self._failure or 'timeout'}")
        if not self._thread.is_alive():
            raise RuntimeError("the browser was ended")
        reply: queue.Queue[tuple[bool, Any]] = queue.Queue()
        self._jobs.put((fn, reply))
        try:
            ok, value = reply.get(timeout=JOB_TIMEOUT_S)
        except queue.Empty:
            self.close()
            raise RuntimeError("the browser did not answer in time; it was ended") from None
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """End Chromium on every path: politely, then by its recorded pid (bwrap takes the rest)."""
        if self._thread is not None and self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join(timeout=5)
        pid = pid_of(self.root / "chromium")
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    # ------------------------------------------------------------------ interception
    def _on_dialog(self, dialog: Any) -> None:
        self.dialogs.append({"type": dialog.type, "message": dialog.message, "choice": self.dialog_choice})
        dialog.accept() if self.dialog_choice == "accept" else dialog.dismiss()

    def record(self, entry: dict[str, Any]) -> None:
        self.log.record(entry)

    def _answer(self, route: Any, client: Any) -> None:
        req = route.request
        url = urlsplit(req.url)
        body = req.post_data_buffer or b""
        ctype = (req.headers.get("content-type") or "").split(";")[0].strip()
        form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)) \
            if ctype == "application/x-www-form-urlencoded" else {}
        # the path as the app will see it (decoded): what the gate checks and the log records
        entry: dict[str, Any] = {"method": req.method, "url": req.url, "path": unquote(url.path or "/"),
                                 "query": url.query, "form": form, "status": None, "blocked": False}
        if url.scheme != "http" or url.hostname != ORIGIN_HOST or url.port not in (None, 80):
            entry.update(blocked=True, reason="not the app's origin")
            self.record(entry)
            route.abort("blockedbyclient")
            return
        headers = {k: v for k, v in req.headers.items() if k.lower() in ("cookie", "content-type", "accept")}
        method, target, cookies = req.method, url.path + (f"?{url.query}" if url.query else ""), []
        for _ in range(MAX_REDIRECTS):
            refusal = self.gate(method, entry["path"], entry["form"])  # every hop: a redirect is no way round
            if refusal is not None:
                entry.update(blocked=True, reason=refusal, status=403)
                self.record(entry)
                route.fulfill(status=403, content_type="text/html", body=refusal_page(refusal))
                return
            client.cookies.clear()
            resp = client.request(method, target, content=body, headers=headers, follow_redirects=False)
            entry["status"] = resp.status_code
            self.record(entry)
            fresh = resp.headers.get_list("set-cookie")
            cookies += fresh
            nxt = urlsplit(urljoin(ORIGIN + target, resp.headers.get("location", "")))
            if resp.status_code not in (301, 302, 303, 307, 308) or nxt.hostname != ORIGIN_HOST:
                break
            # Chromium does not route the hop after a fulfilled redirect: the harness follows it
            # itself (each hop logged), and the page gets the last answer with every cookie set
            if resp.status_code in (301, 302, 303):
                method, body = "GET", b""
                headers.pop("content-type", None)
            jar = dict(c.split(";", 1)[0].split("=", 1) for c in fresh if "=" in c.split(";", 1)[0])
            old = dict(p.strip().split("=", 1) for p in headers.get("cookie", "").split(";") if "=" in p)
            headers["cookie"] = "; ".join(f"{k}={v}" for k, v in {**old, **jar}.items())
            target = nxt.path + (f"?{nxt.query}" if nxt.query else "")
            entry = {"method": method, "url": ORIGIN + target, "path": unquote(nxt.path or "/"), "query": nxt.query,
                     "form": form if method != "GET" else {},
                     "status": None, "blocked": False, "redirected_from": entry["seq"]}
        if req.is_navigation_request():
            self.location = entry["url"]
        out = [(k, v) for k, v in resp.headers.multi_items()
               if k.lower() not in ("content-length", "content-encoding", "set-cookie", "location")]
        out += [("set-cookie", c) for c in cookies]
        status = 200 if resp.status_code in (301, 302, 303, 307, 308) else resp.status_code
        route.fulfill(status=status, headers=dict(_join(out)), body=resp.content)


def _join(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Headers as one value each (Playwright takes a dict; repeated Set-Cookie joined by newline)."""
    seen: dict[str, str] = {}
    for k, v in items:
        seen[k] = f"{seen[k]}\n{v}" if k in seen else v
    return list(seen.items())
