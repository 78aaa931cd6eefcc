"""Pi, in its RPC mode, offered a second message while it compacts: a planted history of 400
turns of 400 words (Pi folds it before the turn's own request; 100 turns it does not), the
summary request held at the scripted gateway while the message is written on Pi's stdin. What
Pi does is the figure; what is asserted is that it was measured, with causal bounds: the message
was written while the summary was held, its answer (if any) comes after it was written, and a
message that reached the model did so in a request after the held summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.agents.products import install
from assay.agents.products.pi.adapter import PiAgent
from assay.records.perf import FigureStatus
from assay.run.perf import during
from tests.run.perf.test_first_token_and_folding import _figures

pytestmark = [pytest.mark.slow, pytest.mark.agents]

SIZE, WORDS = 400, 400


@pytest.mark.timeout(900)
def test_pi_is_offered_a_message_while_it_compacts_and_its_answer_is_measured(tmp_path: Path) -> None:
    if install.find("pi") is None:
        pytest.skip("pi is not installed (run: assay agents install pi, or scripts/install-agents.sh)")
    figs = _figures(tmp_path, PiAgent(), [{"id": "compaction", "kind": "compaction", "sizes": [SIZE],
                                           "words": WORDS}])
    assert figs[f"compaction.folding@{SIZE}"].p50 == 1.0  # the one-shot turn folds at this size
    accepts, ack, reached = (figs[f"compaction.{m}@{SIZE}"] for m in during.FIGURES)
    assert accepts.status == FigureStatus.measured, accepts  # the live session folded too: the summary was held
    assert "reached the gateway, which held its answer" in accepts.reason
    assert ack.status == FigureStatus.measured and ack.p50 is not None and ack.p50 > 0, ack
    if accepts.p50 == 1.0:  # answered while held: before the bound, and "success": true
        assert ack.p50 < during.ACK_WAIT_S and '"success": true' in accepts.reason
    assert reached.status == FigureStatus.measured and reached.p50 in (0.0, 1.0)
    if reached.p50 == 1.0:
        assert "call 1)" in accepts.reason and "in call " in reached.reason  # held: call 1; reached later
