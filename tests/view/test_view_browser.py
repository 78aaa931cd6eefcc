"""Every page of `assay view` in a real Chromium (Playwright drives Debian's /usr/bin/chromium):
the run list, a trial, compare, an audit label that makes a new score version, and a live run
updating while its trials finish, steered by the viewer's own buttons. Screenshots of each page
are kept under the test's tmp folder (``screens/``)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from assay.store.control_log import read_changes
from assay.store.integrity import verify_run
from assay.store.rundir import RunDir
from tests.conftest import assay_env, cli_timeout, server_process, write_agent, write_suite, write_task
from tests.run.test_ctl import wait_for_control

playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = "/usr/bin/chromium"
WAIT_MS = 120_000


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.skip("no /usr/bin/chromium (scripts/test.sh installs it)")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):
    screens = tmp_path_factory.getbasetemp() / "screens"
    screens.mkdir(exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)  # waits evaluate scripts; the escaping is tested without the CSP
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("dialog", lambda d: (errors.append("dialog: " + d.message), d.dismiss()))
    pg.shot = lambda name: pg.screenshot(path=str(screens / f"{request.node.name}-{name}.png"), full_page=True)
    yield pg
    ctx.close()
    assert not errors, errors  # no script error, and no alert() planted by an agent ever ran


def test_run_list_sorts_filters_and_marks_bad_runs(page, viewer: str) -> None:
    first = urllib.request.urlopen(viewer + "/", timeout=60).read().decode()  # the first open, as served
    row = first.split("data-run='tampered'", 1)[1].split("</tr>", 1)[0]
    assert "TAMPERED" in row or "verifying…" in row  # never its numbers as if they held
    page.goto(viewer + "/")
    # the background verification reaches it: the page turns it TAMPERED by itself (a reload), files named
    playwright.expect(page.locator("tr[data-run=tampered]")).to_contain_text("TAMPERED", timeout=WAIT_MS)
    playwright.expect(page.locator("tr.verifying")).to_have_count(0, timeout=WAIT_MS)  # every row verified
    page.wait_for_load_state()
    assert "result.json" in page.locator("tr[data-run=tampered]").inner_text()
    assert "verifying…" not in page.locator("#runs").inner_text()
    rows = page.locator("#runs tr[data-run]")
    assert sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.run)")) == ["broken", "r1", "r2", "tampered"]
    assert "UNREADABLE" in page.locator("tr[data-run=broken]").inner_text()
    page.shot("list")
    page.click("text=strict rate")  # highest first
    order = page.locator("#runs tr[data-run]").evaluate_all("rs => rs.map(r => r.dataset.run)")
    assert order.index("r2") < order.index("r1")  # r2 passes both tasks
    page.click("text=strict rate")  # lowest first
    order = page.locator("#runs tr[data-run]").evaluate_all("rs => rs.map(r => r.dataset.run)")
    assert order.index("r1") < order.index("r2")
    page.fill("input[name=q]", "tamp")
    page.click("text=filter")
    assert page.locator("#runs tr[data-run]").evaluate_all("rs => rs.map(r => r.dataset.run)") == ["tampered"]


def test_trial_page_shows_evidence_and_escapes_the_agent(page, viewer: str) -> None:
    page.goto(viewer + "/run/r1")
    playwright.expect(page.locator(".figs svg").nth(1)).to_be_visible(timeout=WAIT_MS)  # fetched after the page
    assert page.locator("#headline").is_visible() and page.locator("#figs").count() == 0
    page.shot("run")
    page.click("#trials a:has-text('greet')")
    body = page.locator("body")
    assert "file_contains" in body.inner_text() and "harness_read" in body.inner_text().replace("-", "_") \
        or "trust" in body.inner_text()
    assert page.evaluate("window.pwned") is None  # the agent's <script> is text, never run
    page.click("summary:has-text('agent.stdout')")
    text = page.locator("details[data-name='agent.stdout'] pre").inner_text()
    assert "<script>window.pwned=1</script>" in text and "\\x1b[2J" in text
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1300, "an over-long line was not folded"
    assert page.locator("text=conftest.py").count() >= 1  # the workspace diff
    page.shot("trial")


def test_compare_lists_flips_first_and_the_gates(page, viewer: str) -> None:
    page.goto(viewer + "/compare")
    page.select_option("select[name=a]", "r1")
    page.select_option("select[name=b]", "r2")
    page.click("button:has-text('compare')")
    flipped = page.locator("#flipped").inner_text()
    assert "math" in flipped and "improved" in flipped and "greet" not in flipped
    assert page.locator("#gates td.PASSED, #gates td.FAILED").count() == 2
    assert page.locator("h2").all_inner_texts()[:2] == ["Flipped", "Gates"]
    page.shot("compare")


def test_an_audit_label_makes_a_new_score_version(page, viewer: str, runs_dir: Path) -> None:
    page.goto(viewer + "/run/r2/audit")
    before = int(page.locator("#score-version").inner_text())
    suspect = page.locator("section.suspect").first
    assert "test_files_edited" in suspect.inner_text() and "conftest.py" in suspect.inner_text()
    suspect.locator("input[name=by]").fill("reviewer")
    suspect.locator("button[value=false]").click()
    assert int(page.locator("#score-version").inner_text()) == before + 1
    assert page.locator("section.suspect .label").first.inner_text() == "false_pass"
    labels = json.loads(next((runs_dir / "r2" / "scores").glob("labels-*.json")).read_text())
    assert labels["labelled_by"] == "reviewer" and list(labels["labels"].values()) == ["false_pass"]
    assert verify_run(runs_dir / "r2").ok
    page.shot("audit")


@pytest.fixture
def live_run(tmp_path: Path, runs_dir: Path) -> Iterator[tuple[subprocess.Popen, Path, Path]]:
    s = write_suite(tmp_path / "suite")
    for tid in ("one", "two"):
        write_task(s, tid, task={"category": "code", "budget": {"wall_time_s": 300}, "predicates": [
            {"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]}, workspace={"task.txt": tid})
    release = tmp_path / "release"
    release.mkdir()
    agent = write_agent(tmp_path / "held.yaml", "held", f"""
        import os, time
        tid = open('task.txt').read().strip()
        while not os.path.exists(os.path.join({str(release)!r}, tid)):
            time.sleep(0.02)
        open('out.txt', 'w').write('done')
    """)
    run_dir = runs_dir / "live"
    with server_process([sys.executable, "-m", "assay.cli.main", "run", str(s), "--agent", str(agent), "--sandbox",
                         "host", "--out", str(run_dir), "-q", "-j", "1", "--seed", "1"], env=assay_env(),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        wait_for_control(run_dir, proc)
        try:
            yield proc, run_dir, release
        finally:
            for t in ("one", "two"):
                (release / t).touch()


def test_live_run_updates_as_trials_finish_and_ctl_from_the_viewer(page, viewer: str, live_run) -> None:
    proc, run_dir, release = live_run
    page.goto(viewer + "/run/live")
    page.wait_for_function("document.querySelectorAll('#in-flight li').length === 1", timeout=WAIT_MS)
    first = page.locator("#in-flight li").inner_text().split(".")[0]
    page.click("#ctl-pause")
    page.wait_for_function("(document.getElementById('live-state')?.textContent || '').startsWith('paused')", timeout=WAIT_MS)
    page.shot("paused")
    (release / first).touch()
    page.wait_for_function("document.querySelector('#live-counts td.pass') && "
                           "document.querySelector('#live-counts td.pass').textContent === '1'", timeout=WAIT_MS)
    assert page.locator("#in-flight li").count() == 0  # paused: nothing new started
    page.fill("#ctl-n", "2")
    page.click("#ctl-jobs")
    page.click("#ctl-resume")
    page.wait_for_function("document.querySelectorAll('#in-flight li').length === 1", timeout=WAIT_MS)
    page.shot("live")
    second = page.locator("#in-flight li").inner_text().split(".")[0]
    (release / second).touch()
    page.wait_for_function("(document.getElementById('live-state')?.textContent || '') === 'the run ended'", timeout=WAIT_MS)
    assert proc.wait(timeout=cli_timeout()) == 0
    changes = read_changes(RunDir.open(run_dir))
    assert [c["command"] for c in changes] == ["pause", "jobs", "resume"]
    assert all(c["who"].startswith("viewer (") for c in changes)
    assert verify_run(run_dir).ok


@pytest.mark.slow
def test_view_over_a_run_of_the_starter_example(page, tmp_path: Path) -> None:
    """`assay view` over a real run of examples/starter (oracle and nop): every trial page opens,
    with its predicates, trust levels and timeline, and nothing on it fails."""
    from tests.conftest import ROOT, read_line_with
    from tests.view.conftest import cli

    runs = tmp_path / "runs"
    res = cli("run", str(ROOT / "examples" / "starter"), "--agent", "oracle", "--agent", "nop", "--sandbox", "host",
              "--out", str(runs / "starter"), "-q", "-j", "2", "--max-retries", "0")
    assert (runs / "starter" / "manifest.json").is_file(), res.stdout + res.stderr
    assert cli("score", str(runs / "starter")).returncode in (0, 1)
    with server_process([sys.executable, "-m", "assay.cli.main", "view", str(runs), "--port", "0"], env=assay_env(),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        url = read_line_with(proc, "assay view: ", 60).split(": ", 1)[1].strip().rstrip("/")  # type: ignore[union-attr]
        page.goto(url + "/")
        assert page.locator("tr[data-run=starter] td.st").inner_text() in ("scored", "scored verifying…")
        playwright.expect(page.locator("tr[data-run=starter] td.st")).to_have_text("scored", timeout=WAIT_MS)
        page.click("a:has-text('starter')")
        playwright.expect(page.locator(".figs svg").nth(1)).to_be_visible(timeout=WAIT_MS)
        # the run's page has loaded before its trial links are read (the click only starts the navigation:
        # under load the links were once read from a page that had none yet)
        playwright.expect(page.locator("#trials a").first).to_be_attached(timeout=WAIT_MS)
        links = page.locator("#trials a").evaluate_all("as => as.map(a => a.href)")
        planned = json.loads((runs / "starter" / "manifest.json").read_text())["plan"]["trials"]
        assert len(links) == len(planned), links  # a link for every trial of the plan
        page.shot("starter-run")
        for href in links:
            page.goto(href)
            body = page.locator("body").inner_text()
            assert "predicate" in body and "trust" in body and "trace timeline" in body, href
        page.shot("starter-trial")


def test_live_panel_escapes_quotes_inside_its_attributes(page) -> None:
    """The live panel writes agent and category names into ``data-`` attributes in double quotes;
    a name holding a quote must stay one attribute's value, never open another."""
    from assay.view.runs_page import LIVE_JS

    txt = LIVE_JS.split("function txt(", 1)[1].split("\n", 1)[0]
    hostile = 'a" data-owned="1" onmouseover="alert(1)'
    page.set_content("<table id='t'></table>")
    got = page.evaluate("""([src, a]) => { const txt = eval('(function txt(' + src + ')');
        document.getElementById('t').innerHTML = '<tr data-agent="' + txt(a) + '" data-category="' + txt("c'") + '"><td>'
          + txt(a) + '</td></tr>';
        const tr = document.querySelector('#t tr');
        return [tr.getAttribute('data-agent'), tr.getAttribute('data-category'), tr.getAttributeNames(), tr.textContent]; }""",
                        [txt, hostile])
    assert got == [hostile, "c'", ["data-agent", "data-category"], hostile]
