"""The agent's stdout is the agent's: any process in its sandbox can write to it (through
``/proc/<pid>/fd/1``), so the product adapters' completion readers meet forged envelopes and
events. What they cannot read is recorded as such; a final answer that is not text is not one;
neither is ever the harness's crash (an infra error that would hide the agent's failure)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from assay.agents.base import AgentOutcome
from assay.agents.products import PRODUCTS
from assay.agents.products.common import completion_of
from assay.trace.redact import Redactor

DEEP = "[" * 5000 + "]" * 5000
FORGED = {
    "nested past the parser": DEEP + "\n",
    "a final answer that is an object": json.dumps({"type": "final", "text": {"x": 1}, "final": {"x": 1}}) + "\n",
    "text blocks that are numbers": json.dumps({"type": "message_end", "message": {
        "role": "assistant", "content": [{"type": "text", "text": 5}]}}) + "\n",
    "an envelope with deep facts": '{"final": "ok", "toolSummary": ' + "[" * 600 + "]" * 600 + "}\n",
}


@pytest.mark.parametrize("agent", ["pi", "dsh", "openclaw", "hermes"])
@pytest.mark.parametrize("forged", sorted(FORGED))
def test_forged_stdout_is_read_as_evidence_never_a_crash(tmp_path: Path, agent: str, forged: str) -> None:
    adapter = PRODUCTS.get(agent)
    adapter = adapter() if isinstance(adapter, type) else adapter
    ctx = SimpleNamespace(home=tmp_path, resume=None)  # completion reads the home and the resume point only
    final, facts = completion_of(adapter, ctx, FORGED[forged].encode())
    outcome = AgentOutcome(exit_code=0, final_output=final)  # the one door every adapter's outcome passes
    assert outcome.final_output is None or isinstance(outcome.final_output, str)
    if final is not None and not isinstance(final, str):
        assert any("not text" in e for e in outcome.errors)
    json.dumps(Redactor().data(facts))  # the facts reach the trace and the result: they must serialise


def test_an_adapter_whose_reader_fails_is_recorded_not_raised(tmp_path: Path) -> None:
    class Broken:
        def completion(self, ctx, stdout):  # noqa: ANN001
            raise TypeError("sequence item 0: expected str instance, int found")

    final, facts = completion_of(Broken(), SimpleNamespace(home=tmp_path, resume=None), b"{}")  # type: ignore[arg-type]
    assert final is None and facts == {"completion": "unreadable: TypeError"}
