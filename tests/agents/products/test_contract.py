"""The tool contract: which tasks each agent can run, and with which native switches."""

from __future__ import annotations

import pytest

from assay.agents.products import contract
from assay.agents.products.dsh.adapter import DshAgent
from assay.agents.products.hermes.adapter import HermesAgent
from assay.agents.products.openclaw.adapter import OpenClawAgent
from assay.agents.products.pi.adapter import PiAgent

ALL = ["shell", "read", "write", "edit", "list"]


@pytest.mark.parametrize("c,expected", [
    (PiAgent.contract, ["bash", "read", "write", "edit", "ls"]),
    (OpenClawAgent.contract, ["exec", "process", "read", "write", "edit", "ls"]),
    (HermesAgent.contract, ["terminal", "file"]),
    (DshAgent.contract, ["tool-bash", "tool-fs", "tool-fs-search"]),
])
def test_full_contract_maps_onto_every_agent(c: contract.ToolContract, expected: list[str]) -> None:
    assert c.select(ALL) == (expected, None)


def test_read_only_task_runs_where_tools_split_finely_and_is_skipped_elsewhere() -> None:
    assert PiAgent.contract.select(["read", "list"]) == (["read", "ls"], None)
    assert OpenClawAgent.contract.select(["read", "list"]) == (["read", "ls"], None)
    switches, why = HermesAgent.contract.select(["read", "list"])
    assert switches == [] and why.startswith("unsupported:") and "write" in why and "file" in why
    switches, why = DshAgent.contract.select(["read", "list"])
    assert switches == [] and why.startswith("unsupported:") and "tool-fs" in why


def test_shell_only_and_unknown_tools() -> None:
    for c in (PiAgent.contract, OpenClawAgent.contract, HermesAgent.contract, DshAgent.contract):
        switches, why = c.select(["shell"])
        assert why is None and switches
        _, why = c.select(["teleport"])
        assert why == "unsupported: tools ['teleport'] are not in the tool contract"


@pytest.mark.parametrize("c,shell", [(PiAgent.contract, ["bash"]), (OpenClawAgent.contract, ["exec", "process"]),
                                     (HermesAgent.contract, ["terminal"]), (DshAgent.contract, ["tool-bash"])])
def test_world_tools_bring_the_shell_for_the_shim_and_say_so(c: contract.ToolContract, shell: list[str]) -> None:
    s = c.plan(["ledger.*"], ["ledger.record_entry", "user.refuse"])
    assert s.why is None and list(s.switches) == shell
    assert s.shell_for_shim and s.neutral == {"shell"}
    rec = s.record()
    assert rec["world_tools"] == ["ledger.record_entry", "user.refuse"] and rec["world_exposure"] == "shim"
    assert rec["task_tools"] == ["ledger.*"] and rec["shell_for_shim"] is True
    # the task allows the shell itself: nothing is added on the world's behalf
    s = c.plan(["shell", "ledger.*"], ["ledger.record_entry"])
    assert s.why is None and not s.shell_for_shim
    # world patterns without declared worlds still need the shim
    assert c.plan(["ledger.record_entry"]).world == ("ledger.record_entry",)


def test_an_agent_without_a_shell_cannot_run_world_tasks() -> None:
    files_only = contract.ToolContract("files", (contract.ToolGroup(("read",), frozenset({"read"})),))
    s = files_only.plan(["read", "ledger.*"], ["ledger.list_entries"])
    assert s.why is not None and s.why.startswith("unsupported:") and "assay-tool" in s.why and not s.switches


@pytest.mark.parametrize("c,switches", [(HermesAgent.contract, ["terminal"]), (DshAgent.contract, ["tool-bash"])])
def test_file_tool_bundled_with_disallowed_tools_is_left_to_the_shell(c: contract.ToolContract,
                                                                        switches: list[str]) -> None:
    """[shell, read] on Hermes/DSH: the file group would add write/edit, so it stays off and the shell reads."""
    s = c.plan(["shell", "read", "ledger.*"], ["ledger.list_entries"])
    assert s.why is None and list(s.switches) == switches
    assert s.via_shell == {"read"} and s.neutral == {"shell"}
    assert s.record()["via_shell"] == ["read"]
    # without a shell, the old refusal stands
    _, why = c.select(["read"])
    assert why is not None and why.startswith("unsupported:")
    # where tools split finely nothing is left to the shell
    assert PiAgent.contract.plan(["shell", "read"]).via_shell == frozenset()


def test_empty_tool_list_enables_nothing() -> None:
    assert PiAgent.contract.select([]) == ([], None)
