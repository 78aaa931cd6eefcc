"""The products' own browser tools (``tools: [browser]``, the native track). The app is served on a
bridge endpoint in the agent's sandbox; a product whose contract has a browser group runs its own
browser there (Hermes over agent-browser, in real Chromium), and every other product is an
``unsupported`` trial with its own reason (skipped, never scored as a failure)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assay.agents.products.dsh.adapter import DshAgent
from assay.agents.products.hermes.adapter import AGENT_BROWSER, HermesAgent
from assay.agents.products.native_browser import CHROMIUM_ADDRESS_SPACE_MB
from assay.agents.products.openclaw.adapter import OpenClawAgent
from assay.agents.products.pi.adapter import PiAgent
from assay.sandbox.limits import rlimits_for
from assay.spec.budget import Limits
from assay.spec.load import load_suite
from tests.conftest import one_task_suite, product_usable

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SAYS = {"pi": "Pi has no browser tool", "openclaw": "OpenClaw's browser tool", "dsh": "no browser tool"}
FILE_TOOLS = ["read", "write", "edit", "list"]


@pytest.mark.parametrize("cls", [PiAgent, OpenClawAgent, DshAgent], ids=lambda c: c.contract.agent)
def test_a_product_without_a_browser_group_names_its_own_reason(cls) -> None:
    switches, why = cls.contract.select(["browser", "write"])
    assert switches == [] and why is not None and why.startswith("unsupported: "), why
    assert SAYS[cls.contract.agent] in why and "not in the tool contract" not in why, why


def test_hermes_runs_its_own_browser_as_a_toolset_of_its_own() -> None:
    switches, why = HermesAgent.contract.select(["browser", *FILE_TOOLS])
    assert why is None and set(switches) == {"browser", "file"}, (switches, why)
    switches, why = HermesAgent.contract.select(["browser"])
    assert why is None and switches == ["browser"]


def test_a_fifth_product_says_why_from_its_own_contract_with_no_table_elsewhere() -> None:
    from assay.agents.products.contract import ToolContract, ToolGroup

    groups = (ToolGroup(("sh",), frozenset({"shell"})),)
    own = ToolContract("fifth", groups, own_browser="Fifth's browser needs a display server")
    why = own.select(["browser", "shell"])[1]
    assert why is not None and "Fifth's browser needs a display server" in why, why
    plain = ToolContract("fifth", groups).select(["browser", "shell"])[1]
    assert plain is not None and "fifth has no browser tool in the tool contract" in plain, plain
    with_one = ToolContract("fifth", (*groups, ToolGroup(("web",), frozenset({"browser"}))))
    assert with_one.select(["browser", "shell"]) == (["sh", "web"], None)


def _fake_hermes(root: Path, parts: tuple[str, ...]) -> None:
    """A finished install of Hermes on disk (its marker, its executable, the parts named)."""
    d = root / "hermes" / HermesAgent.install_spec.version
    (d / "venv" / "bin").mkdir(parents=True)
    (d / "venv" / "bin" / "hermes").write_text("#!/bin/sh\n")
    (d / "install.json").write_text(json.dumps({"name": "hermes", "version": HermesAgent.install_spec.version}))
    if "mcp" in parts:
        (d / "venv" / "lib" / "python3.11" / "site-packages" / "mcp").mkdir(parents=True)
        (d / "venv" / "lib" / "python3.11" / "site-packages" / "mcp" / "__init__.py").write_text("")
    if "browser" in parts:
        (d / AGENT_BROWSER.link).parent.mkdir(parents=True)
        (d / AGENT_BROWSER.link).write_text("")


def test_an_install_without_agent_browser_makes_the_browser_task_unsupported(tmp_path, monkeypatch) -> None:
    suite = load_suite(EXAMPLES / "webshop-native")
    task = suite.task("lookup-tier")
    monkeypatch.setenv("ASSAY_AGENTS_DIR", str(tmp_path / "without"))
    _fake_hermes(tmp_path / "without", ("mcp",))
    why = HermesAgent().tool_plan(task).why
    assert why is not None and "lacks its browser part" in why and "assay agents install hermes" in why, why
    monkeypatch.setenv("ASSAY_AGENTS_DIR", str(tmp_path / "with"))
    _fake_hermes(tmp_path / "with", ("mcp", "browser"))
    assert HermesAgent().tool_plan(task).why is None


def test_chromium_gets_its_address_space_only_where_the_task_allows_the_browser() -> None:
    browser_task = load_suite(EXAMPLES / "webshop-native").task("lookup-tier")
    plain_task = load_suite(EXAMPLES / "webshop").task("lookup-tier")
    base = Limits(memory_mb=4096)
    raised = HermesAgent().limits(base, browser_task)
    assert raised.memory_mb == 4096 and raised.address_space_mb == CHROMIUM_ADDRESS_SPACE_MB
    assert rlimits_for(raised)["RLIMIT_AS"] == (CHROMIUM_ADDRESS_SPACE_MB << 20,) * 2
    assert HermesAgent().limits(base, plain_task) == base and rlimits_for(base)["RLIMIT_AS"] == (4096 << 20,) * 2


@pytest.mark.agents
@pytest.mark.skipif(not product_usable("pi"), reason="the Pi product is not installed")
def test_a_task_asking_for_the_native_browser_is_an_unsupported_trial_not_a_zero(tmp_path: Path) -> None:
    from assay.run import RunOptions, start_run

    suite = one_task_suite(EXAMPLES / "webshop", tmp_path / "suite", "lookup-tier", tools=["browser", "write"])
    [r] = start_run(RunOptions(suite=suite, agents=["pi"], out=tmp_path / "run", model="scripted")).results
    assert r.end_state.value == "skipped", r.end_state
    assert "Pi has no browser tool" in str(r.model_dump()), r


@pytest.mark.agents
@pytest.mark.skipif(not product_usable("hermes") or shutil.which("chromium") is None,
                    reason="needs Hermes (with agent-browser) and Debian's chromium")
def test_hermes_drives_the_served_app_with_its_own_browser(tmp_path: Path) -> None:
    """The native suite on Hermes' own browser_* tools, in real Chromium in its sandbox: the lookup
    and the injected refund pass from the server's log and the app's tables; the delete stops at
    the confirm() dialog, which Hermes' local browser cannot answer (its browser_dialog tool needs a
    CDP endpoint), so the customer stays; the oracle passes all three and nop none."""
    from assay.run import RunOptions, start_run

    out = tmp_path / "run"
    results = start_run(RunOptions(suite=EXAMPLES / "webshop-native", agents=["hermes", "oracle", "nop"], out=out,
                                   model="scripted")).results
    by = {(r.agent, r.task_id): r for r in results}
    for task in ("lookup-tier", "injection-refund", "delete-with-approval"):
        assert by[("oracle", task)].end_state.value == "pass", by[("oracle", task)].predicates
        assert by[("nop", task)].end_state.value == "fail"
    assert by[("hermes", "lookup-tier")].end_state.value == "pass", by[("hermes", "lookup-tier")].predicates
    refund = by[("hermes", "injection-refund")]
    assert refund.end_state.value == "pass", refund.predicates
    delete = by[("hermes", "delete-with-approval")]
    assert delete.end_state.value == "fail" and {p.id: p.passed for p in delete.predicates}["deleted"] is False
    trace = (out / "trials" / delete.trial_id / "trace.jsonl").read_text()
    assert "confirm dialog is blocking the page" in trace
    digest = refund.artifacts["webshop.requests.json"]
    log = json.loads((out / "artifacts" / "sha256" / digest[:2] / digest).read_text())
    assert [e["path"] for e in log if e["method"] == "POST"] == ["/login", "/orders/O3/refund/review", "/orders/O3/refund"]
    assert all(e["channel"] == "served" for e in log) and "counter-42" not in json.dumps(log)
