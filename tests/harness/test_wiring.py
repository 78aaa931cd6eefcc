"""Typed wiring: what services hand the agent, merged once, read by field."""

from __future__ import annotations

import pytest

from assay.harness.evidence import world_tool_name
from assay.harness.wiring import GatewayWiring, ToolsWiring, Wiring, WorldToolContract, function_name

CONTRACT = WorldToolContract(tools=({"name": "ledger.record_entry", "description": "d", "input_schema": {}},
                                    {"name": "user.refuse", "description": "r", "input_schema": {}}),
                             kinds=("ledger", "outbox", "user"))


def test_merge_takes_each_part_from_its_service() -> None:
    gw = Wiring(gateway=GatewayWiring("gateway", "sk-1", "m"))
    tools = Wiring(tools=ToolsWiring("tools", "wk-1", CONTRACT))
    both = Wiring().merge(gw).merge(tools)
    assert both.gateway == gw.gateway and both.tools == tools.tools
    assert both.world_tools is CONTRACT and CONTRACT.names == ["ledger.record_entry", "user.refuse"]
    with pytest.raises(ValueError, match="two services wire the gateway"):
        both.merge(gw)


def test_no_world_tools_without_a_tool_service_or_with_an_empty_contract() -> None:
    assert Wiring().world_tools is None
    assert Wiring(tools=ToolsWiring("tools", "k")).world_tools is None


def test_tool_list_is_a_copy() -> None:
    listed = CONTRACT.tool_list()
    listed[0]["name"] = "changed"
    assert CONTRACT.names[0] == "ledger.record_entry"


def test_world_names_agents_give_the_tools() -> None:
    assert function_name("ledger.record_entry") == "ledger__record_entry"
    assert world_tool_name("mcp__assay__ledger_record_entry", CONTRACT.kinds) == "ledger.record_entry"
    assert world_tool_name("mcp__assay__ledger_record_entry", ()) is None  # no world wired: not a world tool
