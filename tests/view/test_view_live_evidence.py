"""What the live page and the trial page show beyond the basics, in a real Chromium: a live run's
back-off (the gateway waiting on a real loopback upstream that answered 429) and its run budget
(spent of the limit, then REACHED), each shown on the page; a webshop trial's screenshots (kept
as evidence by the browser world) shown on its trial page, and a screenshot whose bytes no longer
match its digest never served. Screenshots of each page are kept under ``screens/``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

from assay.store.rundir import RunDir
from tests.conftest import ROOT, assay_env, cli_timeout, read_line_with, server_process, write_suite, write_task
from tests.gateway.fake_upstream import Upstream
from tests.run.test_ctl import wait_for_control
from tests.view.conftest import cli
from tests.view.test_view_browser import WAIT_MS, browser, page, playwright

__all__ = ["browser", "page"]  # the fixtures, shared with the other browser tests


class GatedUpstream(Upstream):
    """The fake upstream, holding every request until the test releases it (then as before: the
    first answered 429 with Retry-After), so the page is watching before the back-off happens."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            assert self._release is not None
            await self._release.wait()
        await super().__call__(scope, receive, send)


@contextmanager
def viewer_over(runs: Path) -> Iterator[str]:
    with server_process([sys.executable, "-m", "assay.cli.main", "view", str(runs), "--port", "0"], env=assay_env(),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        line = read_line_with(proc, "assay view: ", 60)
        assert line, proc.stderr.read() if proc.poll() is not None else "the viewer printed no address"  # type: ignore[union-attr]
        yield line.split("assay view: ", 1)[1].strip().rstrip("/")


def test_live_page_shows_the_backoff_and_the_run_budget(page, tmp_path: Path) -> None:
    up = GatedUpstream(fail_first=[429], retry_after="1").start()
    s = write_suite(tmp_path / "suite")
    write_task(s, "hello", task={"category": "code", "budget": {"wall_time_s": 120},
                                 "predicates": [{"id": "said", "kind": "file_exists", "path": "never.txt"}]})
    runs = tmp_path / "runs"
    run_dir = runs / "budget"
    env = {**assay_env(), "ASSAY_UPSTREAM_API_KEY": "sk-upstream-view-0123456789"}
    cmd = [sys.executable, "-m", "assay.cli.main", "run", str(s), "--agent", "reference", "--model",
           f"upstream:{up.url}/v1#up-model", "--sandbox", "host", "--max-tokens", "1", "--out", str(run_dir), "-q"]
    try:
        with server_process(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
            wait_for_control(run_dir, proc)
            with viewer_over(runs) as url:
                watch(page, url, up, proc)
    finally:
        up.stop()
    shown = page.locator("#budget").inner_text()
    [r] = [r for r in RunDir.open(run_dir).results() if r.attempt == 1]
    assert r.usage.model_calls >= 1 and "of 1 tokens" in shown
    retries = [json.loads(line) for line in (run_dir / "trials" / r.trial_id / "trace.jsonl").read_text().splitlines()]
    assert [(e["data"]["model"], e["data"]["status"]) for e in retries if e["data"].get("reason") == "upstream_retry"] \
        == [("up-model", 429)]  # what the page showed is what the trace holds


def watch(page: Any, url: str, up: GatedUpstream, proc: subprocess.Popen) -> None:
    """The live page while the run runs: the budget first, then the back-off and the budget reached."""
    page.goto(url + "/run/budget")
    # the budget as the runner had it before the page connected (its state), the limit with it
    playwright.expect(page.locator("#budget")).to_contain_text("spent $0", timeout=WAIT_MS)
    playwright.expect(page.locator("#budget")).to_contain_text("0 of 1 tokens")
    page.wait_for_function("document.querySelectorAll('#in-flight li').length === 1", timeout=WAIT_MS)
    assert page.locator("#backoff").inner_text() == ""  # nothing waited on yet
    page.shot("budget-before")
    up.release()  # the upstream answers: 429 first, the gateway backs off, then the retry is answered
    playwright.expect(page.locator("#backoff")).to_contain_text("backing off: up-model (HTTP 429) until",
                                                                timeout=WAIT_MS)
    playwright.expect(page.locator("#budget")).to_contain_text("REACHED tokens", timeout=WAIT_MS)
    page.shot("backoff-and-budget")
    playwright.expect(page.locator("#live-state")).to_have_text("the run ended", timeout=WAIT_MS)
    proc.wait(timeout=cli_timeout())


@pytest.fixture(scope="module")
def shop_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("chromium") is None:
        pytest.skip("the webshop world needs chromium")
    runs = tmp_path_factory.mktemp("shop") / "runs"
    res = cli("run", str(ROOT / "examples" / "webshop"), "--agent", "oracle", "--task", "lookup-tier",
              "--out", str(runs / "shop"), "-q")
    assert res.returncode == 0, res.stdout + res.stderr
    assert cli("score", str(runs / "shop")).returncode == 0
    return runs


def test_trial_page_shows_the_webshop_screenshots(browser, shop_runs: Path, tmp_path_factory) -> None:
    run_dir = shop_runs / "shop"
    [res] = RunDir.open(run_dir).results()
    shots = sorted(name for name in res.artifacts if name.endswith(".png"))
    assert shots, res.artifacts  # the browser world kept its screenshots as evidence
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})  # the viewer's own CSP in force
    pg = ctx.new_page()
    blocked: list[str] = []
    pg.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    try:
        with viewer_over(shop_runs) as url:
            pg.goto(f"{url}/run/shop/trial/{res.trial_id}")
            imgs = pg.locator("figure img")
            playwright.expect(imgs).to_have_count(len(shots), timeout=WAIT_MS)  # each screenshot once
            assert sorted(imgs.evaluate_all("is => is.map(i => i.alt)")) == shots
            widths = imgs.evaluate_all("is => Promise.all(is.map(i => i.decode().then(() => i.naturalWidth, "
                                       "() => 0)))")  # each one loaded and decoded (0: refused or broken)
            assert len(widths) == len(shots) and all(w > 0 for w in widths), widths
            screens = tmp_path_factory.getbasetemp() / "screens"
            screens.mkdir(exist_ok=True)
            pg.screenshot(path=str(screens / "trial-screenshots.png"), full_page=True)

            # the viewer serves a screenshot by its digest, and only while its bytes are that digest
            digest = res.artifacts[shots[0]]
            with urllib.request.urlopen(f"{url}/run/shop/artifact/{digest}", timeout=60) as r:
                assert r.headers["content-type"] == "image/png" and r.read().startswith(b"\x89PNG")
            art = RunDir.open(run_dir).artifact_path(digest)
            data = art.read_bytes()
            art.write_bytes(data[:-16] + b"\x00" * 16)
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(f"{url}/run/shop/artifact/{digest}", timeout=60)
            assert e.value.code == 404
    finally:
        ctx.close()
    assert blocked == []  # nothing on the page was refused by its own policy
