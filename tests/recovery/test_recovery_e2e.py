"""examples/recovery end to end: every fault kind with the reference agent (scripted model) and
two branching command agents; the recovery figures recomputed by hand from the result files."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from assay.report import build_report
from assay.run import RunOptions, start_run
from assay.score import score_run
from assay.score.recovery_run import recovery_of_run, render_markdown
from tests.worlds.test_examples_e2e import _reference_available

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SUITE = EXAMPLES / "recovery"
KINDS = {"error", "timeout", "truncated", "dropped", "slow", "lost_receipt", "agent_killed", "sandbox_restart",
         "late_approval"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("recovery")
    out = {"branching": root / "branching"}
    start_run(RunOptions(suite=SUITE, out=out["branching"], agents=[str(SUITE / "agents" / "careful.yaml"),
                                                                   str(SUITE / "agents" / "careless.yaml")]))
    if _reference_available():
        out["reference"] = root / "reference"
        start_run(RunOptions(suite=SUITE, agents=["reference"], out=out["reference"], repeat=2, model="scripted"))
    return out


def _final_results(run: Path) -> dict[str, dict]:
    final: dict[str, dict] = {}
    for p in (run / "trials").glob("*/attempts/*/result.json"):
        r = json.loads(p.read_text())
        if r["trial_id"] not in final or r["attempt"] > final[r["trial_id"]]["attempt"]:
            final[r["trial_id"]] = r
    return final


def _by_hand(run: Path) -> dict[tuple[str, str], dict]:
    """Recovery figures from the result files with nothing but json and arithmetic."""
    final = _final_results(run)
    costs: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    for p in (run / "trials").glob("*/attempts/*/result.json"):  # spend counts every attempt
        r = json.loads(p.read_text())
        costs[r["trial_id"]] += r["usage"]["cost_usd"]
        calls[r["trial_id"]] += r["usage"]["tool_calls"]
    base = {(r["task_id"], r["agent"], r["repetition"]): r for r in final.values() if r["variant"] == "base"}
    out: dict[tuple[str, str], dict] = {}
    for r in final.values():
        fired = r["extra"].get("tool_faults", []) + r["extra"].get("process_faults", [])
        kinds = sorted({f["kind"] for f in fired})
        planned = r["extra"].get("tool_fault_plan") or r["extra"].get("process_fault_plan")
        if not planned or not kinds or r["end_state"] not in ("pass", "fail", "timeout"):
            continue
        b = base[(r["task_id"], r["agent"], r["repetition"])]
        for key in ((r["agent"], "all"), (r["agent"], "+".join(kinds))):
            row = out.setdefault(key, {"faulted": 0, "recovered": 0, "dups": 0, "restarts": 0, "resumed": 0, "cost": [],
                                       "calls": [], "wall": []})
            row["faulted"] += 1
            row["restarts"] += sum(1 for f in fired if f.get("restart"))
            row["resumed"] += sum(1 for f in fired if f.get("restart") == "resume")
            row["recovered"] += r["end_state"] == "pass"
            row["dups"] += r["extra"]["duplicate_side_effects"]
            row["cost"].append(costs[r["trial_id"]] - costs[b["trial_id"]])
            row["calls"].append(calls[r["trial_id"]] - calls[b["trial_id"]])
            row["wall"].append(r["timings"]["agent_s"] - b["timings"]["agent_s"])
    return out


def _check_against_hand(run: Path) -> None:
    fig = recovery_of_run(run)
    hand = _by_hand(run)
    # one truth: the score document carries these very figures, the report prints the same table
    doc = score_run(run)
    assert doc.recovery == fig
    for agent in {a for a, _ in hand}:
        assert doc.agents[agent].recovery.rate == pytest.approx(fig.row(agent).rate, abs=1e-6)  # rounded brief
        assert doc.agents[agent].recovery.fault_trials == fig.row(agent).faulted
    assert render_markdown(fig).strip() in build_report(run, "md")
    assert {(r.agent, r.kind) for r in fig.rows} == set(hand)
    for (agent, kind), h in hand.items():
        row = fig.row(agent, kind)
        assert (row.faulted, row.recovered, row.duplicates, row.pairs, row.restarts, row.resumed) == (
            h["faulted"], h["recovered"], h["dups"], len(h["cost"]), h["restarts"], h["resumed"])
        assert row.extra_cost_usd == pytest.approx(sum(h["cost"]) / len(h["cost"]))
        assert row.extra_tool_calls == pytest.approx(sum(h["calls"]) / len(h["calls"]))
        assert row.extra_wall_s == pytest.approx(sum(h["wall"]) / len(h["wall"]))


@pytest.mark.slow
def test_every_fault_kind_is_injected_and_recorded(runs):
    run = runs.get("reference", runs["branching"])
    seen = defaultdict(set)
    for trace in (run / "trials").glob("*/trace.jsonl"):
        for line in trace.read_text().splitlines():
            ev = json.loads(line)
            if ev["kind"] == "fault_injected":
                assert ev["source"] == "world"
                seen[ev["trial_id"].split(".")[1]].add(ev["data"]["kind"])
    assert "base" not in seen
    assert {k for kinds in seen.values() for k in kinds} == KINDS
    assert all(v == f"fault-{k.replace('_', '-')}" for k in KINDS for v in seen if k in seen[v])


@pytest.mark.slow
def test_branching_agents_careful_recovers_careless_duplicates(runs):
    run = runs["branching"]
    final = _final_results(run)
    careful = [r for r in final.values() if r["agent"] == "careful"]
    assert len(careful) == 11 and all(r["end_state"] == "pass" for r in careful)
    lost = final["book-entry.fault-lost-receipt.careless.r1"]
    assert lost["end_state"] == "fail" and lost["extra"]["duplicate_side_effects"] == 1
    assert any(i["type"] == "wrong_side_effect" for i in lost["incidents"])
    # the careful agent looked the lost write up instead of writing again
    assert final["book-entry.fault-lost-receipt.careful.r1"]["usage"]["tool_calls"] == 2
    _check_against_hand(run)
    fig = recovery_of_run(run)
    # a blind retry after a lost receipt, or after being killed once its write ran, books twice
    assert (fig.row("careless").faulted, fig.row("careless").recovered, fig.row("careless").duplicates) == (9, 6, 3)
    assert fig.row("careless", "agent_killed").duplicates == 1 and fig.row("careless", "late_approval").recovered == 1
    assert fig.row("careless").restarts == 3 and fig.row("careless").resumed == 0  # a command agent: fresh
    assert fig.row("careful", "lost_receipt").rate == 1.0
    assert "| careless | lost_receipt | 0% (0/1)" in render_markdown(fig)


@pytest.mark.slow
def test_reference_agent_recovers_from_every_fault(runs):
    if "reference" not in runs:
        pytest.skip("reference agent not available")
    run = runs["reference"]
    final = _final_results(run)
    assert len(final) == 22 and all(r["end_state"] == "pass" for r in final.values())
    # the confirming write under the same key is a replay, not a second side effect
    assert all(r["extra"]["behaviour"]["wrong_side_effects"] == 0 for r in final.values())
    _check_against_hand(run)
    row = recovery_of_run(run).row("reference")
    # every restart continued the reference agent's own message list
    assert (row.faulted, row.recovered, row.duplicates, row.not_exercised, row.restarts, row.resumed) == (
        18, 18, 0, 0, 6, 6)


@pytest.mark.slow
@pytest.mark.agents
def test_a_product_agent_recovers_over_its_own_mcp_client(tmp_path):
    """Pi calls the world tools over its own MCP client: a dropped answer reaches it as a tool
    error; killed and started again (its own session resumed, same home), its write again is a replay,
    and a late approval is joined: the scripted model's writes under one key recover every kind."""
    from assay.agents.products import install
    from assay.sandbox.registry import backends

    if "bwrap" not in backends() or not backends()["bwrap"]().status().usable:
        pytest.skip("the bubblewrap sandbox is not usable here")
    if install.find("pi") is None:
        pytest.skip("pi is not installed (run: assay agents install pi, or scripts/install-agents.sh)")
    run = tmp_path / "pi"
    start_run(RunOptions(suite=SUITE, agents=["pi"], out=run, model="scripted"))
    final = _final_results(run)
    assert len(final) == 11 and all(r["end_state"] == "pass" for r in final.values()), {
        t: (r["end_state"], r["reason"], r["errors"][:1]) for t, r in final.items()}
    channels = set()
    for trace in (run / "trials").glob("*/trace.jsonl"):
        for line in trace.read_text().splitlines():
            ev = json.loads(line)
            if ev["kind"] == "fault_injected":
                channels.add(ev["data"]["channel"])
    assert channels == {"mcp"}
    _check_against_hand(run)
    row = recovery_of_run(run).row("pi")
    assert (row.faulted, row.recovered, row.duplicates, row.restarts, row.resumed) == (9, 9, 0, 3, 3)
