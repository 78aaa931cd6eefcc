"""examples/webshop end to end in real Chromium: the oracle (a scripted browser-tool solution)
passes every task, nop fails every task, and the reference agent with the scripted model passes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assay.run import RunOptions, start_run
from tests.conftest import product_usable

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium")]


def test_oracle_passes_nop_fails_and_the_scripted_reference_agent_passes(tmp_path):
    results = start_run(RunOptions(suite=EXAMPLES / "webshop", agents=["oracle", "nop", "reference"],
                                   out=tmp_path / "run", model="scripted")).results
    assert len(results) == 18
    for r in results:
        expected = "fail" if r.agent == "nop" else "pass"
        assert r.end_state.value == expected, (r.trial_id, [p for p in r.predicates if not p.passed], r.errors)
        if r.agent != "nop":
            assert not [i for i in r.incidents if i.severity in ("high", "critical")], (r.trial_id, r.incidents)
            assert "webshop.requests.json" in r.artifacts


@pytest.mark.agents
@pytest.mark.skipif(not product_usable("pi"), reason="the Pi product is not installed")
def test_a_product_agent_drives_the_browser_tool_contract_over_mcp(tmp_path):
    [r] = start_run(RunOptions(suite=EXAMPLES / "webshop", agents=["pi"], out=tmp_path / "run", model="scripted",
                               tasks=["delete-with-approval"])).results
    assert r.end_state.value == "pass", [p for p in r.predicates if not p.passed]
    assert r.extra["http_requests"]["webshop"][-1]["path"] in ("/customers/C12/delete",)
