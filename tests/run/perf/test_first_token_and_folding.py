"""First output, first token as printed, and compaction's own duration, measured back from
synthetic agents through the real apparatus (scripted gateway, bubblewrap sandbox). Every bound
is causal, from the method, never a wall-clock one:

- the answer cannot be on the product's stdout before its request reached the gateway, nor after
  the exec ended: open_s <= first_token_s <= turn_s; the first byte is no later than the answer;
- an agent that pauses ``D`` seconds between its folding request and its own request has a
  compaction of at least ``D`` at the gateway (the turn's request arrives after the pause), and
  the compaction ends before the exec does: open_s + compaction_s <= turn_s;
- a folding call's summary printed before the turn's own request is not the first token (it is
  the same scripted text): the first token comes after open_s + compaction_s;
- a request after the turn's own (a session title) is not folding; an agent that prints nothing,
  or never the answer, has those figures unsupported with the reason, never a zero.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.records.perf import FigureStatus
from assay.run.perf.apparatus import ANSWER, printed_at
from assay.run.perf.runner import run_perf
from assay.score.perf import score_folder
from assay.spec.perf import PerfSuite
from tests.run.perf.synthetic import SyntheticAgent
from tests.run.perf.test_measuring import _bwrap

pytestmark = pytest.mark.slow


def test_the_answer_is_timed_by_the_chunk_that_completes_it() -> None:
    out = b"banner\nokay-as" + b"say-perf\n"
    arrivals = ((10.0, 7), (11.0, 14), (12.0, len(out)))
    assert printed_at(out, arrivals, ANSWER) == (12.0,)  # split over two chunks: the later one
    twice = b"okay-assay-perf okay-assay-perf"
    assert printed_at(twice, ((5.0, 15), (6.0, len(twice))), ANSWER) == (5.0, 6.0)
    assert printed_at(b"nothing here", ((5.0, 12),), ANSWER) == ()
    assert printed_at(out, ((10.0, 7),), ANSWER) == ()  # past the timed chunks: unknown, not a guess


def _figures(tmp_path: Path, agent: SyntheticAgent, scenarios: list[dict]) -> dict:
    suite = PerfSuite.model_validate({"name": "t", "repeat": 1, "scenarios": scenarios})
    doc = score_folder(run_perf(suite, {agent.name: lambda: agent}, _bwrap(), tmp_path / "out").out)
    return {f.key: f for f in doc.figures}


def test_first_output_and_first_token_as_printed_lie_between_the_request_and_the_exit(tmp_path: Path) -> None:
    figs = _figures(tmp_path, SyntheticAgent("printer", banner=True, print_answer=True),
                    [{"id": "cold", "kind": "cold_start"}])
    got = {m: figs[f"cold.{m}"] for m in ("open_s", "first_output_s", "first_token_s", "turn_s")}
    assert all(f.status == FigureStatus.measured for f in got.values()), got
    v = {m: f.p50 for m, f in got.items()}
    assert v["open_s"] <= v["first_token_s"] <= v["turn_s"], v
    assert v["first_output_s"] <= v["first_token_s"], v
    assert figs["cold.stream_requested"].p50 == 0.0  # its request does not ask to stream: said, not guessed


def test_an_agent_that_prints_nothing_has_no_first_output_and_says_so(tmp_path: Path) -> None:
    figs = _figures(tmp_path, SyntheticAgent("silent"), [{"id": "cold", "kind": "cold_start"}])
    assert figs["cold.open_s"].status == FigureStatus.measured
    for m in ("first_output_s", "first_token_s"):
        f = figs[f"cold.{m}"]
        assert f.status == FigureStatus.unsupported and f.p50 is None and not f.values, f
    assert "printed nothing" in figs["cold.first_output_s"].reason
    banner = _figures(tmp_path / "b", SyntheticAgent("banner", banner=True), [{"id": "cold", "kind": "cold_start"}])
    assert banner["cold.first_output_s"].status == FigureStatus.measured
    assert "never appeared" in banner["cold.first_token_s"].reason


def test_a_folding_pause_is_measured_as_the_compaction_at_least_as_long(tmp_path: Path) -> None:
    pause = 0.5
    figs = _figures(tmp_path, SyntheticAgent("folder", fold_s=pause, title=True, print_answer=True),
                    [{"id": "compaction", "kind": "compaction", "sizes": [4]}])
    comp = figs["compaction.compaction_s@4"]
    assert comp.status == FigureStatus.measured and comp.p50 is not None and comp.p50 >= pause, comp
    # the summary it printed first is the same text: the first token is the answer to the turn's own request
    assert figs["compaction.first_token_s@4"].p50 >= figs["compaction.open_s@4"].p50 + comp.p50
    assert figs["compaction.folding@4"].p50 == 1.0  # the title request after the turn's own is not folding
    assert figs["compaction.requests@4"].p50 == 3.0
    assert figs["compaction.open_s@4"].p50 + comp.p50 <= figs["compaction.turn_s@4"].p50
    during = figs["compaction.accepts_input_during_compaction@4"]  # no live mode: said why, never a zero
    assert during.status == FigureStatus.unsupported and "no live input mode" in during.reason


def test_no_folding_at_a_size_is_no_compaction_figure_with_the_reason(tmp_path: Path) -> None:
    figs = _figures(tmp_path, SyntheticAgent("plain", title=True), [{"id": "compaction", "kind": "compaction",
                                                                     "sizes": [4]}])
    comp = figs["compaction.compaction_s@4"]
    assert comp.status == FigureStatus.unsupported and comp.p50 is None and "did not fold" in comp.reason, comp
    assert figs["compaction.folding@4"].p50 == 0.0 and figs["compaction.requests@4"].p50 == 2.0
