"""Reports of a real run (oracle and nop, two categories, two repetitions): HTML, Markdown, JSON,
and the HTML drawn by headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.report import build_report, write_report
from assay.report.figures import Point, frontier
from assay.store.rundir import RunDir
from tests.conftest import cli_timeout, write_suite, write_task
from tests.score.synth import attempt, write_run

FIGURES = {"strict-success", "category-heatmap", "security-gate", "cost-per-success", "latency-p95", "recovery",
           "interventions", "cleanup-failures", "pareto"}


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from assay.run import RunOptions, start_run

    root = tmp_path_factory.mktemp("report")
    s = write_suite(root / "suite", categories=[{"id": "code", "weight": 3}, {"id": "ops", "weight": 1}])
    write_task(s, "calc", task={"category": "code", "budget": {"wall_time_s": 60}, "predicates": [
        {"id": "plus", "kind": "file_contains", "path": "calc.py", "text": "a + b"}]},
        workspace={"calc.py": "def add(a, b):\n    return a - b\n"}, solution="sed -i 's/a - b/a + b/' calc.py\n")
    write_task(s, "touch", task={"category": "ops", "budget": {"wall_time_s": 60}, "predicates": [
        {"id": "done", "kind": "file_exists", "path": "done.txt"}]}, solution="echo ok > done.txt\n")
    out = root / "run"
    start_run(RunOptions(suite=s, agents=["oracle", "nop"], out=out, sandbox="host", repeat=2))
    return out


def test_json_report_is_the_score_document(real_run: Path) -> None:
    doc = json.loads(build_report(real_run, "json"))
    assert list(doc)[0] == "isolation" and doc["schema"] == "assay.report/1"
    score = doc["score"]
    assert score["schema"] == "assay.score/2"
    assert score["agents"]["oracle"]["strict_rate"] == 1.0 and score["agents"]["nop"]["strict_rate"] == 0.0
    assert score["weights"]["categories"] == {"code": 0.75, "ops": 0.25}
    assert len(score["trials"]) == 8 and score["inputs"]["result_files"] == 8  # printed: the rows inline


def test_markdown_report(real_run: Path) -> None:
    md = build_report(real_run, "md")
    assert md.startswith("> **NOT ISOLATED")
    assert "| oracle | 100.0 | PASSED | 100.0%" in md
    assert "## Security gate: PASSED" in md


def test_html_is_self_contained_and_links_figures_to_trials(real_run: Path) -> None:
    path = write_report(real_run, "html")
    assert path == real_run / "reports" / "report.html"
    html = path.read_text()
    assert html.index('class="warn"') < html.index("<h1>")  # the isolation warning comes first
    assert not re.search(r'(src|href)="(https?:)?//', html), "the report must not fetch anything"
    assert "<script" not in html
    drawn = set(re.findall(r'data-figure="([^"]+)"', html))
    assert FIGURES <= drawn
    # every in-page link resolves to an anchor, and the figures reach the trials through the agent sections
    ids = set(re.findall(r'id="([^"]+)"', html))
    links = set(re.findall(r'href="#([^"]+)"', html))
    assert links and links <= ids, links - ids
    assert "agent-oracle" in links and "trial-calc.base.oracle.r1" in links
    section = html[html.index('id="trial-calc.base.oracle.r1"'):]
    assert "trace timeline" in section[:20000] and "plus" in section[:20000]  # timeline + verifier evidence


def test_report_with_compare_and_failed_gate(tmp_path: Path, real_run: Path) -> None:
    rs = [attempt("calc", "code", "oracle", 1, "pass", cost=0.2,
                  incidents=[{"type": "secret_leak", "severity": "critical", "summary": "canary in outbox"}]),
          attempt("touch", "ops", "oracle", 1, "fail", cost=0.1)]
    m = RunDir.open(real_run).manifest()
    other = write_run(tmp_path / "other", {"code": 3, "ops": 1}, rs, run_id="other", suite=m.suite,
                      task_digests={t.id: (t.category, t.digest) for t in m.tasks}).path
    html = build_report(other, "html", compare=real_run)
    assert 'class="gate FAILED"' in html and "secret_leak" in html and 'id="compare"' in html
    assert 'href="#trial-calc.base.oracle.r1"' in html  # the incident links to its trial
    md = build_report(other, "md", compare=real_run)
    assert "## Compare" in md and "left out: nop" in md


def test_cli_report_formats(real_run: Path, tmp_path: Path) -> None:
    for fmt in ("html", "md", "json"):
        out = tmp_path / f"r.{fmt}"
        r = subprocess.run([sys.executable, "-m", "assay.cli.main", "report", str(real_run), "--format", fmt,
                            "--out", str(out)], capture_output=True, text=True, timeout=cli_timeout(4.0))
        assert r.returncode == 0, r.stderr
        assert out.stat().st_size > 500
    bad = subprocess.run([sys.executable, "-m", "assay.cli.main", "report", str(real_run), "--format", "pdf"],
                         capture_output=True, text=True, timeout=cli_timeout())
    assert bad.returncode == 2


def test_pareto_frontier() -> None:
    pts = [Point("cheap-bad", 1, 0.2), Point("dear-good", 5, 0.9), Point("dominated", 6, 0.5), Point("mid", 2, 0.6)]
    assert [p.label for p in frontier(pts)] == ["cheap-bad", "mid", "dear-good"]


PROBE = """<script>
window.addEventListener('load', () => {
  const out = [];
  for (const svg of document.querySelectorAll('svg.fig')) {
    const b = svg.getBoundingClientRect();
    const marks = svg.querySelectorAll('rect,circle,path');
    let drawn = 0;
    for (const m of marks) { const r = m.getBBox(); if (r.width > 0 || r.height > 0) drawn++; }
    out.push([svg.dataset.figure, Math.round(b.width), Math.round(b.height), drawn]);
  }
  const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.slow
def test_html_report_draws_in_headless_chromium(real_run: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install chromium); CI installs it")
    html = build_report(real_run, "html")
    page = tmp_path / "probe.html"
    page.write_text(html.replace("</body>", PROBE + "</body>"))  # the probe, not the report, carries a script
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync", "--no-first-run",
                        f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom",
                        page.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="probe">(.*?)</pre>', r.stdout)
    assert m, f"chromium did not render the page: {r.stderr[-2000:]}"
    figs = {name: (w, h, drawn) for name, w, h, drawn in json.loads(m.group(1).replace("&quot;", '"'))}
    assert FIGURES <= set(figs)
    for name in FIGURES:
        w, h, drawn = figs[name]
        assert w > 100 and h > 40, (name, w, h)
        assert drawn > 0, f"figure {name} has no visible marks"
    # figures with data for both agents draw a mark per agent (bars/cells/points) besides axes
    for name in ("strict-success", "category-heatmap", "pareto"):
        assert figs[name][2] >= 2, (name, figs[name])


def test_html_trial_sections_show_each_predicate_s_trust_level(real_run: Path) -> None:
    html = build_report(real_run, "html")
    # the calc task's only predicate reads the snapshot: its verdict is the harness's own read-back
    assert "<th>trust</th>" in html
    assert "<td>plus</td><td>file_contains</td><td>state</td>" in html


EXTENT_PROBE = """<script>
window.addEventListener('load', () => {
  const out = [];
  const content = document.querySelector('h2').getBoundingClientRect().width;
  for (const svg of document.querySelectorAll('svg.fig')) {
    const b = svg.getBoundingClientRect();
    const clipped = [];
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (r.width > 0 && (r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 1 || r.bottom > b.bottom + 1))
        clipped.push(t.textContent);
    }
    out.push([svg.dataset.figure, b.width / content, clipped]);
  }
  const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.slow
def test_figures_fill_the_content_width_and_no_label_is_clipped(real_run: Path, tmp_path: Path) -> None:
    """Drawn by Chromium at 1400 px: every text of every figure inside its SVG, every figure as wide
    as the page's content column."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install chromium); CI installs it")
    page = tmp_path / "extent.html"
    page.write_text(build_report(real_run, "html").replace("</body>", EXTENT_PROBE + "</body>"))
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,1000",
                        f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom",
                        page.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="probe">(.*?)</pre>', r.stdout)
    assert m, f"chromium did not render the page: {r.stderr[-2000:]}"
    figs = json.loads(m.group(1).replace("&quot;", '"'))
    assert FIGURES <= {f[0] for f in figs}
    clipped = {name: texts for name, _, texts in figs if texts}
    assert not clipped, f"text outside its figure: {clipped}"
    narrow = {name: round(share, 2) for name, share, _ in figs if share < 0.95}
    assert not narrow, f"figures narrower than the content column: {narrow}"
