"""The service -> verifier channel is a typed record: read by attribute, combined field by field,
and handed to plugin predicates as the JSON keys they always read."""

from __future__ import annotations

import dataclasses

import pytest

from assay.records.verifier_inputs import TURN_KEY, VerifierInputs

WORLDS = {"ledger": {"initial": {}, "final": {"entries": {"e1": {"id": "e1"}}}, "diff": {"entries": {"added": ["e1"]}}}}


def test_a_misspelt_field_fails_at_once_and_the_record_is_frozen() -> None:
    v = VerifierInputs(worlds=WORLDS)
    with pytest.raises(AttributeError):
        v.world  # noqa: B018 - a typo is an error, never an empty .get
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.worlds = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        VerifierInputs(wrolds=WORLDS)  # type: ignore[call-arg]


def test_merge_takes_what_the_later_service_set_and_keeps_the_rest() -> None:
    worlds = VerifierInputs(worlds=WORLDS, world_db={"ledger": "/x.sqlite"}, tool_calls=({"name": "a"},),
                            canaries=("c1",), facts={"tool_faults": [1]})
    judge = VerifierInputs(judge="conn", facts={"other": 2})
    both = worlds.merge(judge)
    assert both.worlds == WORLDS and both.judge == "conn" and both.canaries == ("c1",)
    assert both.facts == {"tool_faults": [1], "other": 2}
    later = both.merge(VerifierInputs(tool_calls=({"name": "b"},)))  # a turn's checkpoint overrides its fields
    assert later.tool_calls == ({"name": "b"},) and later.world_db == {"ledger": "/x.sqlite"}
    assert VerifierInputs().merge(VerifierInputs()) == VerifierInputs()


def test_the_plugin_payload_has_the_keys_of_the_old_dict() -> None:
    v = VerifierInputs(worlds=WORLDS, world_db={"ledger": "/x"}, approvals=({"decision": "approved"},),
                       canaries=("c",), behaviour={"strict": True}, facts={"world_security": {"approval_requests": 1}})
    p = v.at_turn(2).payload()
    assert set(p) == {"worlds", "world_db", "tool_calls", "approvals", "canaries", "behaviour", "world_security",
                      TURN_KEY}
    assert p[TURN_KEY] == 2 and p["approvals"] == [{"decision": "approved"}]
    assert VerifierInputs().payload() == {}  # no world, no judge, no turn: nothing, as before
