"""Input during compaction, measured back from synthetic agents with a live mode (Pi's RPC words)
through the real apparatus: the scripted gateway holds the answer to the first folding request,
so the compaction is in progress by the harness's clock while the second message is offered.
Every bound is causal, from the method:

- an agent that answers ``D`` seconds after reading the second message has an ack time of at
  least ``D``, and below the hold's bound (it answered while held): accepted, and the message
  reaches the model in a later request;
- an agent that refuses while it compacts is measured "no", with its refusal as the evidence,
  and the message never reaches the model;
- an agent that does not read its input while it compacts answers only after the summary is
  released, so its ack is at least the hold's bound: "no", though the message arrives later;
- an agent that does not fold at the size has the figures unsupported with that reason; one with
  no live mode says why, per product, never a zero.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assay.agents.products.dsh.adapter import DshAgent
from assay.agents.products.hermes.adapter import HermesAgent
from assay.agents.products.openclaw.adapter import OpenClawAgent
from assay.agents.products.pi.adapter import PiAgent
from assay.agents.reference.adapter import ReferenceAgent
from assay.gateway.backends.base import BackendSession
from assay.gateway.neutral import Message, ModelReply, ModelRequest
from assay.records.perf import FigureStatus
from assay.run.perf import during
from assay.run.perf.apparatus import PROMPT
from assay.run.perf.scenarios import no_history_reason
from tests.run.perf.live_synthetic import LiveSynthetic
from tests.run.perf.synthetic import SyntheticAgent
from tests.run.perf.test_first_token_and_folding import _figures

pytestmark = pytest.mark.slow

SIZE = 3
COMPACTION = [{"id": "compaction", "kind": "compaction", "sizes": [SIZE]}]


def _during(tmp_path: Path, agent: SyntheticAgent) -> tuple:
    figs = _figures(tmp_path, agent, COMPACTION)
    return tuple(figs[f"compaction.{m}@{SIZE}"] for m in during.FIGURES)


def test_an_agent_that_takes_the_message_while_it_compacts_is_measured_yes(tmp_path: Path) -> None:
    delay = 0.3
    accepts, ack, reached = _during(tmp_path, LiveSynthetic("accepts", "accept", ack_delay_s=delay))
    assert all(f.status == FigureStatus.measured for f in (accepts, ack, reached)), (accepts, ack, reached)
    assert accepts.p50 == 1.0 and reached.p50 == 1.0
    assert delay <= ack.p50 < during.ACK_WAIT_S, ack  # its own delay at least; answered while the summary was held
    assert "while held" in accepts.reason and '"success": true' in accepts.reason
    assert "reached the model in call" in accepts.reason


def test_an_agent_that_refuses_while_it_compacts_is_measured_no_with_its_refusal(tmp_path: Path) -> None:
    accepts, ack, reached = _during(tmp_path, LiveSynthetic("refuses", "refuse"))
    assert accepts.status == FigureStatus.measured and accepts.p50 == 0.0
    assert ack.status == FigureStatus.measured and ack.p50 < during.ACK_WAIT_S  # the refusal, while held
    assert reached.p50 == 0.0 and "never reached the model" in accepts.reason
    assert '"success": false' in accepts.reason and "compacting" in accepts.reason


def test_an_agent_deaf_while_it_compacts_answers_only_after_the_summary(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(during, "ACK_WAIT_S", 1.0)
    accepts, ack, reached = _during(tmp_path, LiveSynthetic("deaf", "deaf"))
    assert accepts.status == FigureStatus.measured and accepts.p50 == 0.0
    assert ack.status == FigureStatus.measured and ack.p50 >= 1.0, ack  # the hold's bound passed first
    assert reached.p50 == 1.0  # taken afterwards, as a new prompt
    assert "after the summary was released" in accepts.reason


def test_no_folding_at_the_size_leaves_the_figures_unsupported_with_the_reason(tmp_path: Path) -> None:
    for f in _during(tmp_path, LiveSynthetic("plain", "accept", fold=False)):
        assert f.status == FigureStatus.unsupported and f.p50 is None and "did not fold" in f.reason, f


def test_an_agent_without_a_live_mode_says_why_per_product() -> None:
    assert during.no_live_reason(PiAgent()) is None
    assert "hermes chat --query" in during.no_live_reason(HermesAgent())
    assert "openclaw agent --local" in during.no_live_reason(OpenClawAgent())
    assert "never folds" in during.no_live_reason(ReferenceAgent())
    assert "dsh --profile sdk" in during.no_live_reason(DshAgent())
    assert "planted history" in no_history_reason(DshAgent())  # the first of its two reasons
    assert "no live input mode" in during.no_live_reason(SyntheticAgent("other"))
    assert no_history_reason(ReferenceAgent()) is None  # its reason is the live one, not the history's


class _Echo(BackendSession):
    async def complete(self, req: ModelRequest, call_no: int) -> ModelReply:
        return ModelReply(text="ok")


def _ask(text: str) -> ModelRequest:
    return ModelRequest(wire="openai-chat", model="m", messages=(Message("user", text),))


def test_the_gateway_holds_only_a_folding_request_before_the_turns_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(during, "ACK_WAIT_S", 0.05)  # a request held by mistake comes back soon, still held

    async def go(texts: list[str]) -> tuple[during.HeldFold, list]:
        queue: asyncio.Queue = asyncio.Queue()
        hold = during.HeldFold(_Echo(), asyncio.get_running_loop(), queue)
        for i, text in enumerate(texts, 1):
            await hold.complete(_ask(text), i)
        return hold, [(await queue.get())[2] for _ in texts]  # what the gateway told the loop, in order

    hold, seen = asyncio.run(go([PROMPT, "Write a short title for this conversation.", during.SECOND]))
    assert hold.held is None  # a title after the turn's own is not the compaction: never held
    assert [s["kind"] for s in seen] == ["own", "folding", "second"]
    assert during.kind_of({"last_role": "user", "last_text": f"history...\n\n{PROMPT}\n"}) == "own"
    assert during.kind_of({"last_role": "user", "last_text": "Summarize the conversation above."}) == "folding"
