"""Pi, in its RPC mode, offered a second message while it compacts: a planted history of 400
turns of 400 words (Pi folds it before the turn's own request; 100 turns it does not), the
summary request held at the scripted gateway while the message is written on Pi's stdin.

What Pi 1.6.0 (the pinned version) does is asserted, with causal bounds: it folds before the
first message's run starts, with the run already active, so the message offered then is queued as
a follow-up (``disposition: "queued"``), answered while the summary is still held (before the
hold's bound), and asked of the model in a later request than the held summary (call 1).
"""

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
    assert accepts.p50 == 1.0, accepts.reason
    assert "(call 1) reached the gateway, which held its answer" in accepts.reason
    assert "while held" in accepts.reason and '"disposition": "queued"' in accepts.reason
    assert ack.status == FigureStatus.measured and ack.p50 is not None and 0 < ack.p50 < during.ACK_WAIT_S, ack
    assert reached.status == FigureStatus.measured and reached.p50 == 1.0, reached
    assert int(reached.reason.removeprefix("in call ")) > 1  # a later request than the held summary (call 1)
