"""The report of a multi-agent run: agent against agent (paired, one function with compare), and
the header that says what was measured, in HTML, Markdown and JSON alike."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import pytest

from assay.records.manifest import GatewayRecord
from assay.report import build_report
from assay.score.measured import SCRIPTED_FLAG
from tests.score.synth import attempt, write_run


@pytest.fixture
def three_agents(tmp_path: Path) -> Path:
    tasks = [f"t{i}" for i in range(8)]
    rs = [attempt(t, "code", "strong", 1, "pass") for t in tasks]
    rs += [attempt(t, "code", "weak", 1, "pass" if t in tasks[:2] else "fail") for t in tasks]
    rs += [attempt(t, "code", "idle", 1, "skipped", reason="unsupported") for t in tasks]
    gw = GatewayRecord(backend="scripted", model="assay-scripted")
    return write_run(tmp_path / "r", {"code": 1}, rs, gateway=gw).path


def test_json_report_carries_every_pair(three_agents: Path) -> None:
    doc = json.loads(build_report(three_agents, "json"))
    pairs = {tuple(c["agent_pairs"].items())[0]: c for c in doc["agents_compared"]}
    assert set(pairs) == {("idle", "strong"), ("idle", "weak"), ("strong", "weak")}
    sw = pairs[("strong", "weak")]
    assert sw["shared_units"] == 8 and sw["metrics"]["strict_rate"]["delta"] == pytest.approx(-0.75)
    assert sw["metrics"]["strict_rate"]["direction"] == "regressed"
    assert pairs[("idle", "strong")]["nothing_to_compare"]  # idle has zero scored trials: stated, not zero
    assert doc["score"]["measured"]["flags"] == [SCRIPTED_FLAG]


def test_markdown_and_html_show_pairs_and_what_was_measured(three_agents: Path) -> None:
    md = build_report(three_agents, "md")
    assert "## Agent against agent" in md
    assert md.index("measured: scripted model assay-scripted") < md.index("| agent | capability")
    assert f"> **{SCRIPTED_FLAG}**" in md
    row = next(line for line in md.splitlines() if line.startswith("| weak - strong"))
    assert "| 8 | 100.0% | 25.0% | -0.75 |" in row and "regressed" in row
    assert any(line.startswith("| strong - idle") and "nothing to compare" in line for line in md.splitlines())
    html = build_report(three_agents, "html")
    assert 'id="agents-compared"' in html and "weak − strong" in html
    assert html.index("id='measured'") < html.index("<h2>Headline</h2>") and escape(SCRIPTED_FLAG) in html
