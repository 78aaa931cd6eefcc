"""Each wall around the agent's browser, alone: the others are taken away (the routing removed,
the policy opened) and the one left must still stop a ``file://`` read of the verifier's data
and a request to a host that is not the harness. A wall that is gone makes its test fail."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any, Iterator

import pytest

import assay.worlds.webshop.browser as browser_mod
import assay.worlds.webshop.chromium as chromium
from assay.spec.webshop import WebshopInit
from assay.trace.redact import Redactor
from assay.worlds.base import ToolError
from assay.worlds.webshop.world import Webshop

pytestmark = pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")
SECRET = "verifier-only-answer-key-93f1"
OPEN_POLICY: dict[str, list[str]] = {"URLAllowlist": ["*"]}


def _shop(tmp_path: Path) -> tuple[Webshop, dict[str, Any], Path]:
    db = sqlite3.connect(tmp_path / "webshop.sqlite", check_same_thread=False, isolation_level=None)
    w = Webshop(db, WebshopInit(users=[{"username": "clerk", "password": "pw-clerk-1"}]))
    w.create()
    w.bind(redactor=Redactor(), root=tmp_path)
    tools = {t.name.split(".", 1)[1]: t.handler for t in w.tools()}
    tools["navigate"]({"url": "/login"})
    (tmp_path / "verifier").mkdir()
    (tmp_path / "verifier" / "expected.json").write_text(SECRET)
    return w, tools, tmp_path / "verifier" / "expected.json"


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[tuple[Webshop, dict[str, Any], Path]]:
    w, tools, secret = _shop(tmp_path)
    yield w, tools, secret
    w.close()
    w.db.close()


@pytest.fixture
def routing_only_shop(tmp_path: Path, monkeypatch) -> Iterator[tuple[Webshop, dict[str, Any], Path]]:
    """The browser with the policy open and the host's network shared: only the routing is left."""
    real = chromium.launcher

    def shared_net(root: Path, origin: str = chromium.ORIGIN) -> Path:
        script = real(root, origin)
        script.write_text(script.read_text().replace("--unshare-all", "--unshare-all --share-net", 1))
        return script

    monkeypatch.setattr(chromium, "policy", lambda origin=chromium.ORIGIN: OPEN_POLICY)
    monkeypatch.setattr(browser_mod, "launcher", shared_net)
    w, tools, secret = _shop(tmp_path)
    yield w, tools, secret
    w.close()
    w.db.close()


@pytest.fixture
def open_policy_shop(tmp_path: Path, monkeypatch) -> Iterator[tuple[Webshop, dict[str, Any], Path]]:
    """The same browser with Chromium's managed policy allowing every URL."""
    monkeypatch.setattr(chromium, "policy", lambda origin=chromium.ORIGIN: OPEN_POLICY)
    w, tools, secret = _shop(tmp_path)
    yield w, tools, secret
    w.close()
    w.db.close()


def _goto(w: Webshop, url: str, *, routing: bool) -> str:
    def job() -> str:
        page = w.browser.page
        if not routing:
            page.unroute_all()
        try:
            page.goto(url, timeout=5000)
        except Exception as e:  # noqa: BLE001
            return f"error: {e}"
        return "opened: " + page.inner_text("body")
    return w.browser.run(job)


def test_the_navigate_tool_refuses_before_the_browser_sees_it(shop, outside):
    w, tools, secret = shop
    url, hits = outside
    for target in (f"file://{secret}", url, "http://webshop.assay.evil.example/", "http://clerk@webshop.assay:81/"):
        with pytest.raises(ToolError, match="only pages of the shop admin"):
            tools["navigate"]({"url": target})
    refused = [r for r in w.browser.requests if r.get("reason") == "refused by the navigate tool (not the app's origin)"]
    assert len(refused) == 4 and hits == []


def test_the_routing_alone_aborts_another_host(routing_only_shop, outside):
    w, _, _ = routing_only_shop
    url, hits = outside

    def unrouted_page() -> str:  # a second page of the same browser has no routing: nothing else is left
        page = w.browser.page.context.new_page()
        try:
            page.goto(url, timeout=5000)
            return page.inner_text("body")
        finally:
            page.close()
    assert w.browser.run(unrouted_page) == "outside" and "/steal" in hits
    hits.clear()
    got = _goto(w, url, routing=True)  # the agent's page, tool bypassed: its routing is all that is left
    assert got.startswith("error:") and "outside" not in got, got
    [entry] = [r for r in w.browser.requests if r["url"] == url]
    assert entry["blocked"] is True and entry["reason"] == "not the app's origin" and hits == []


def test_the_policy_alone_blocks_files_and_other_hosts(shop, outside):
    w, _, secret = shop
    url, hits = outside
    for target in (f"file://{secret}", "file:///usr/", url, "data:text/html,<p>x</p>"):
        out = _goto(w, target, routing=False)
        assert "ERR_BLOCKED_BY_ADMINISTRATOR" in out, (target, out)
    assert hits == []


def test_the_sandbox_alone_has_no_network_and_no_verifier_files(open_policy_shop, outside):
    w, _, secret = open_policy_shop
    url, hits = outside
    listing = _goto(w, "file:///usr/", routing=False)
    assert listing.startswith("opened:") and "lib" in listing, listing  # the policy is really open here
    out = _goto(w, f"file://{secret}", routing=False)
    assert out.startswith("error:") and SECRET not in out and "ERR_FILE_NOT_FOUND" in out, out
    out = _goto(w, url, routing=False)
    assert out.startswith("error:") and hits == [], out
