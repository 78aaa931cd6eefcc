"""The products' own browser tools (``tools: [browser]``, the native track): each product says
exactly why it cannot run one against a harness world here, and the trial is ``unsupported``
with that reason (skipped, never scored as a failure)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from assay.agents.products.dsh.adapter import DshAgent
from assay.agents.products.hermes.adapter import HermesAgent
from assay.agents.products.openclaw.adapter import OpenClawAgent
from assay.agents.products.pi.adapter import PiAgent
from tests.conftest import product_usable

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SAYS = {"pi": "Pi has no browser tool", "openclaw": "OpenClaw's browser tool", "hermes": "agent-browser",
        "dsh": "no browser tool"}


@pytest.mark.parametrize("cls", [PiAgent, OpenClawAgent, HermesAgent, DshAgent], ids=lambda c: c.contract.agent)
def test_each_product_names_why_its_own_browser_cannot_run_here(cls) -> None:
    switches, why = cls.contract.select(["browser", "write"])
    assert switches == [] and why is not None and why.startswith("unsupported: "), why
    assert SAYS[cls.contract.agent] in why, why
    assert "request log" in why and "not in the tool contract" not in why, why



def test_a_fifth_product_says_why_from_its_own_contract_with_no_table_elsewhere() -> None:
    from assay.agents.products.contract import ToolContract, ToolGroup

    groups = (ToolGroup(("sh",), frozenset({"shell"})),)
    own = ToolContract("fifth", groups, own_browser="Fifth's browser needs a display server")
    why = own.select(["browser", "shell"])[1]
    assert why is not None and "Fifth's browser needs a display server" in why and "request log" in why, why
    plain = ToolContract("fifth", groups).select(["browser", "shell"])[1]
    assert plain is not None and "fifth has no browser tool in the tool contract" in plain, plain

@pytest.mark.agents
@pytest.mark.skipif(not product_usable("pi"), reason="the Pi product is not installed")
def test_a_task_asking_for_the_native_browser_is_an_unsupported_trial_not_a_zero(tmp_path: Path) -> None:
    from assay.run import RunOptions, start_run

    suite = tmp_path / "suite"
    shutil.copytree(EXAMPLES / "webshop", suite)
    for d in (suite / "tasks").iterdir():
        if d.name != "lookup-tier":
            shutil.rmtree(d)
    s = yaml.safe_load((suite / "suite.yaml").read_text())
    s["categories"] = [c for c in s["categories"] if c["id"] == "lookup"]
    (suite / "suite.yaml").write_text(yaml.safe_dump(s))
    task = suite / "tasks" / "lookup-tier" / "task.yaml"
    data = yaml.safe_load(task.read_text())
    data["tools"] = ["browser", "write"]
    task.write_text(yaml.safe_dump(data, sort_keys=False))
    [r] = start_run(RunOptions(suite=suite, agents=["pi"], out=tmp_path / "run", model="scripted")).results
    assert r.end_state.value == "skipped", r.end_state
    assert "Pi has no browser tool" in str(r.model_dump()), r
