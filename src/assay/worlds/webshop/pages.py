"""The browser tools' bodies: each runs on the browser's thread and answers with what the agent
sees (the page's address, title and text), never with anything the verifier decides on.

A URL the agent gives is checked here first (only the app's origin, http, no other scheme);
Chromium's policy and the routing refuse the rest again. Screenshots mask every element that
shows a registered secret (a planted canary), so the picture in evidence never shows one.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin, urlsplit

from assay.trace.redact import Redactor
from assay.worlds.base import ToolError
from assay.worlds.webshop.browser import CONTROLS_JS, TEXT_LIMIT, Browser
from assay.worlds.webshop.chromium import ORIGIN, ORIGIN_HOST


def app_url(url: str) -> str:
    """The absolute URL of ``url`` on the app's origin, or ToolError for anything else."""
    full = urljoin(ORIGIN + "/", url.strip())
    parts = urlsplit(full)
    if parts.scheme != "http" or parts.hostname != ORIGIN_HOST or parts.port not in (None, 80) or parts.username:
        raise ToolError(f"only pages of the shop admin ({ORIGIN}) can be opened, not {url!r}")
    return full


class BrowserTools:
    def __init__(self, browser: Browser, redactor: Redactor):
        self.b = browser
        self.redactor = redactor

    def _view(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        page = self.b.page
        try:
            text = page.inner_text("body")
        except Exception:  # noqa: BLE001 - an error page has no body worth reading
            text = ""
        last = self.b.requests[-1] if self.b.requests else {}
        out = {"url": self.b.location or page.url, "title": page.title(), "status": last.get("status"), "text": text[:TEXT_LIMIT],
               "truncated": len(text) > TEXT_LIMIT}
        if self.b.dialogs:
            out["dialogs"] = list(self.b.dialogs)
            self.b.dialogs.clear()
        return {**out, **(extra or {})}

    def _act(self, fn: Any) -> dict[str, Any]:
        def job() -> dict[str, Any]:
            from playwright.sync_api import Error as PlaywrightError

            try:
                fn(self.b.page)
            except PlaywrightError as e:
                raise ToolError(str(e).splitlines()[0][:300]) from None
            return self._view()
        return self.b.run(job)

    def navigate(self, a: dict[str, Any]) -> dict[str, Any]:
        try:
            url = app_url(a["url"])
        except ToolError:
            self.b.record({"method": "GET", "url": a["url"], "path": None, "query": "", "form": {}, "status": None,
                           "blocked": True, "reason": "refused by the navigate tool (not the app's origin)"})
            raise
        return self._act(lambda p: p.goto(url, wait_until="load"))

    def click(self, a: dict[str, Any]) -> dict[str, Any]:
        def go(p: Any) -> None:
            self.b.dialog_choice = a.get("dialog", "dismiss")
            try:
                p.click(a["selector"])
                p.wait_for_load_state("load")
            finally:
                self.b.dialog_choice = "dismiss"
        return self._act(go)

    def type(self, a: dict[str, Any]) -> dict[str, Any]:
        return self._act(lambda p: p.fill(a["selector"], str(a["text"])))

    def select(self, a: dict[str, Any]) -> dict[str, Any]:
        return self._act(lambda p: p.select_option(a["selector"], a["value"]))

    def read_page(self, a: dict[str, Any]) -> dict[str, Any]:
        def job() -> dict[str, Any]:
            page = self.b.page
            if a.get("mode") == "accessibility":
                tree = page.locator("body").aria_snapshot()
                return {"url": page.url, "title": page.title(), "accessibility": tree[:TEXT_LIMIT]}
            controls = page.eval_on_selector_all("input, select, textarea, button, a[href]", CONTROLS_JS)
            return self._view({"controls": controls[:100]})
        return self.b.run(job)

    def screenshot(self, a: dict[str, Any]) -> dict[str, Any]:
        """Save a PNG under the world's evidence folder, secrets masked; answer with its name."""
        def job() -> dict[str, Any]:
            page = self.b.page
            try:
                text = page.inner_text("body")
            except Exception:  # noqa: BLE001
                text = ""
            shown = {n: v for n, v in self.redactor.known().items() if v and v in text}
            mask = [page.get_by_text(v, exact=False) for v in shown.values()]
            self.b.masked.update(shown)
            n = len(self.b.shots) + 1
            path = self.b.root / "shots" / f"shot-{n:02d}-{a.get('label', 'page')}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(path), mask=mask, mask_color="#000000", full_page=False)
            self.b.shots.append(path)
            return {"screenshot": path.name, "url": page.url, "masked": sorted(shown)}
        return self.b.run(job)
