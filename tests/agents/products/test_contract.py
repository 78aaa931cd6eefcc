"""The tool contract: which tasks each agent can run, and with which native switches."""

from __future__ import annotations

import pytest

from assay.agents.products import contract

ALL = ["shell", "read", "write", "edit", "list"]


@pytest.mark.parametrize("c,expected", [
    (contract.PI, ["bash", "read", "write", "edit", "ls"]),
    (contract.OPENCLAW, ["exec", "process", "read", "write", "edit", "ls"]),
    (contract.HERMES, ["terminal", "file"]),
    (contract.DSH, ["tool-bash", "tool-fs", "tool-fs-search"]),
])
def test_full_contract_maps_onto_every_agent(c: contract.ToolContract, expected: list[str]) -> None:
    assert c.select(ALL) == (expected, None)


def test_read_only_task_runs_where_tools_split_finely_and_is_skipped_elsewhere() -> None:
    assert contract.PI.select(["read", "list"]) == (["read", "ls"], None)
    assert contract.OPENCLAW.select(["read", "list"]) == (["read", "ls"], None)
    switches, why = contract.HERMES.select(["read", "list"])
    assert switches == [] and why.startswith("unsupported:") and "write" in why and "file" in why
    switches, why = contract.DSH.select(["read", "list"])
    assert switches == [] and why.startswith("unsupported:") and "tool-fs" in why


def test_shell_only_and_world_tools() -> None:
    for c in (contract.PI, contract.OPENCLAW, contract.HERMES, contract.DSH):
        switches, why = c.select(["shell"])
        assert why is None and switches
        _, why = c.select(["shell", "ledger.record_entry"])
        assert why is not None and why.startswith("unsupported:") and "ledger.record_entry" in why
        _, why = c.select(["teleport"])
        assert why == "unsupported: tools ['teleport'] are not in the tool contract"


def test_empty_tool_list_enables_nothing() -> None:
    assert contract.PI.select([]) == ([], None)
