"""``--fail-if`` on performance figures: the forms it reads, units, ratios to the baseline, and a
gate that compared nothing does not pass."""

from __future__ import annotations

import pytest

from assay.errors import UsageError
from assay.score.perf_gates import PerfGate, perf_checks
from tests.perf.docs import document


def test_the_forms_of_a_gate() -> None:
    g = PerfGate.parse("resume_p95_1000_turns>2s")
    assert (g.scenario, g.metric, g.size, g.stat, g.op, g.value) == ("resume", "open_s", 1000, "p95", ">", 2.0)
    g = PerfGate.parse("resume.open_s@1000.p50 >= 1500ms")
    assert (g.size, g.stat, g.value) == (1000, "p50", 1.5)
    g = PerfGate.parse("rss_growth_per_turn>1MiB")
    assert (g.scenario, g.metric, g.stat, g.value) == ("turns", "peak_bytes", "slope", 2**20)
    g = PerfGate.parse("resume.open_s.exponent>1.2")
    assert (g.stat, g.value) == ("exponent", 1.2)
    assert PerfGate.parse("resume.open_s@1000.p95.ratio>1.25").ratio


@pytest.mark.parametrize("bad", ["resume>2s", "resume_p95_1000_turns>2parsecs", "nope", "resume.open_s@x.p95>1"])
def test_a_bad_gate_is_a_usage_error_with_the_fix(bad: str) -> None:
    with pytest.raises(UsageError, match="fix:"):
        PerfGate.parse(bad)


def test_gates_trip_on_the_candidate_and_pass_under_the_bound() -> None:
    base = document({"pi": {"open_per_turn": 0.001, "leak": 0}})
    cand = document({"pi": {"open_per_turn": 0.003, "leak": 3e6}})
    checks = perf_checks(base, cand, [PerfGate.parse("resume_p95_1000_turns>2s"),
                                      PerfGate.parse("rss_growth_per_turn>1MB"),
                                      PerfGate.parse("resume.open_s@1000.p50.ratio>1.5"),
                                      PerfGate.parse("resume_p95_1000_turns>10s")])
    assert [c.tripped for c in checks] == [True, True, True, False], [c.why for c in checks]
    assert checks[2].value == pytest.approx(3.0)


def test_a_gate_on_an_unsupported_or_missing_figure_trips_with_the_reason() -> None:
    doc = document({"dsh": {}})
    unsup, missing = perf_checks(doc, doc, [PerfGate.parse("store.open_s@100.p95>1s"),
                                            PerfGate.parse("resume_p95_5000_turns>1s")])
    assert unsup.tripped and unsup.value is None and "unsupported" in unsup.why
    assert missing.tripped and "no figure" in missing.why


def test_no_agent_in_common_trips_every_gate() -> None:
    (check,) = perf_checks(document({"pi": {}}), document({"hermes": {}}), [PerfGate.parse("resume_p50_10>1s")])
    assert check.tripped and "nothing compared" in check.why
