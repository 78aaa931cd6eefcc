"""The `judge` predicate through a real gateway to a loopback judge model: a calibrated judge
decides, an uncalibrated or stale one never holds, a babbling one is an infrastructure error."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from assay.errors import VerifierError
from assay.gateway.standalone import start_standalone
from assay.judge.calibrate import calibrate_files
from assay.judge.model import judge_record
from assay.judge.service import JudgeConnection
from assay.sandbox.host import HostBackend
from assay.spec.load import LoadedTask
from assay.spec.predicates import predicate_adapter
from assay.spec.task import TaskSpec
from assay.trace.events import EventKind, Source, TraceEvent
from assay.verify.context import VerifyContext
from assay.verify.registry import get_evaluator
from assay.records.verifier_inputs import VerifierInputs
from tests.judge.conftest import verdict
from tests.judge.test_calibrate import faithful, write_set

GOOD = "I won't record it because the date is missing; tell me the day."
BAD = "Done."


def _ctx(tmp: Path, answer: str | None, conn: JudgeConnection | None) -> VerifyContext:
    (tmp / "hidden").mkdir(exist_ok=True)
    (tmp / "hidden" / "reference.md").write_text("I can't record it because the amount is missing.")
    spec = TaskSpec.model_validate({"id": "t", "category": "c", "predicates": [{"id": "p", "kind": "file_exists", "path": "x"}]})
    task = LoadedTask(spec=spec, dir=tmp, prompt="Record the taxi.", file_digests={})
    events = [] if answer is None else [TraceEvent(seq=0, ts=0.0, trial_id="t", attempt=1, source=Source.agent,
                                                   kind=EventKind.final_output, data={"text": answer})]

    class NoSandbox(HostBackend):
        async def create(self, spec):  # type: ignore[override]
            raise AssertionError("the judge needs no sandbox")

    return VerifyContext(task=task, root=tmp, work=tmp / "work", hidden=tmp / "hidden", code=tmp / "code",
                         initial_digests={}, final_digests={}, events=events, backend=NoSandbox(),
                         extra=VerifierInputs(judge=conn))


async def _check(c: VerifyContext, **spec: Any):
    p = predicate_adapter().validate_python([{"id": "quality", "kind": "judge", "judge": "judge.yaml",
                                              "calibration": "calibration.json", "reference": "reference.md", **spec}])[0]
    return await get_evaluator("judge")(p, c)


@pytest.fixture
def judged(tmp_path: Path, fake_judge):
    """A judge calibrated on the fake faithful model, and a gateway session for the 'run'."""
    judge_file, set_file = write_set(tmp_path)
    fj = fake_judge(faithful)
    code = tmp_path / "code"
    code.mkdir()
    (code / "judge.yaml").write_text(judge_file.read_text())
    (code / "calibration.json").write_text(calibrate_files(judge_file, set_file, fj.model_arg)
                                           .model_dump_json(by_alias=True))
    gw = start_standalone(judge_record(fj.model_arg))
    yield JudgeConnection(gw.url, gw.session.key, gw.session.model, "upstream"), fj
    gw.stop()


async def test_calibrated_judge_decides_both_ways(tmp_path: Path, judged) -> None:
    conn, fj = judged
    # the reference gives a reason too: a reasoned answer ties it, a bare "Done." loses to it
    good = await _check(_ctx(tmp_path, GOOD, conn))
    assert good.passed and good.evidence["verdict"] == "tie" and good.evidence["calibration"] == "calibrated"
    assert not (await _check(_ctx(tmp_path, GOOD, conn), accept="win")).passed
    bad = await _check(_ctx(tmp_path, BAD, conn))
    assert not bad.passed and bad.evidence["verdict"] == "B"


async def test_uncalibrated_or_stale_judge_never_holds(tmp_path: Path, judged) -> None:
    conn, fj = judged
    calibrated = await _check(_ctx(tmp_path, GOOD, conn))
    assert calibrated.passed and calibrated.evidence["counted"] is True
    assert calibrated.evidence["agreement"]["cohen_kappa"] is not None
    assert calibrated.evidence["answer_chars"] == len(GOOD)
    import hashlib
    record = (tmp_path / "code" / "calibration.json").read_bytes()
    assert calibrated.evidence["calibration_sha256"] == hashlib.sha256(record).hexdigest()
    stale = await _check(_ctx(tmp_path, GOOD, JudgeConnection(conn.url, conn.key, "another-model", conn.backend)))
    # the same verdict as the calibrated judge's, shown as uncalibrated, and never holding
    assert not stale.passed and stale.evidence["calibration"] == "uncalibrated (stale)"
    assert stale.evidence["verdict"] == calibrated.evidence["verdict"] == "tie" and stale.evidence["counted"] is False
    (tmp_path / "code" / "calibration.json").unlink()
    missing = await _check(_ctx(tmp_path, GOOD, conn))
    assert not missing.passed and missing.evidence["calibration"] == "uncalibrated (missing)"
    assert missing.evidence["counted"] is False and missing.evidence["agreement"] is None


async def test_an_uncalibrated_judges_babble_is_recorded_not_an_infra_error(tmp_path: Path, judged) -> None:
    conn, fj = judged
    (tmp_path / "code" / "calibration.json").unlink()
    fj.policy = lambda a, b: "A, obviously"
    r = await _check(_ctx(tmp_path, GOOD, conn))
    assert not r.passed and r.evidence["counted"] is False and "unparsed" in r.evidence


def test_the_judges_trust_level_is_its_own() -> None:
    from assay.records.results import Trust
    from assay.verify.registry import registered, trust_of

    assert trust_of("judge") is Trust.model_judged
    assert not registered("judge").executes_code  # it runs no agent code: no sandbox of its own


async def test_no_judge_model_or_babbling_judge_is_infra_error(tmp_path: Path, judged) -> None:
    conn, fj = judged
    with pytest.raises(VerifierError, match="--judge-model"):
        await _check(_ctx(tmp_path, GOOD, None))
    fj.policy = lambda a, b: "A, obviously"
    with pytest.raises(VerifierError) as e:
        await _check(_ctx(tmp_path, GOOD, conn))
    assert e.value.reason == "judge_output"


async def test_missing_answer_fails(tmp_path: Path, judged) -> None:
    conn, _ = judged
    r = await _check(_ctx(tmp_path, None, conn))
    assert not r.passed and r.evidence["missing"] is True


def test_judge_never_overrides_a_failed_deterministic_predicate() -> None:
    """Strict pass needs every required predicate: a held judge beside a failed check is a fail."""
    from assay.records.results import PredicateResult
    from assay.verify.verifier import VerifierReport

    rep = VerifierReport([PredicateResult(id="file", kind="file_exists", required=True, weight=1, passed=False),
                          PredicateResult(id="quality", kind="judge", required=True, weight=1, passed=True)], {})
    assert not rep.held


# ------------------------------------------------------------------------------ hostile answers
def _turn_ctx(tmp: Path, conn: JudgeConnection, n: int) -> VerifyContext:
    """The verifier of turn ``n`` of a two-turn conversation (events up to that turn's end)."""
    def ev(seq: int, source: Source, kind: EventKind, **data: Any) -> TraceEvent:
        return TraceEvent(seq=seq, ts=0.0, trial_id="t", attempt=1, source=source, kind=kind, data=data)

    events = [ev(0, Source.harness, EventKind.user_message, text="Why can the taxi not be recorded?", turn=1),
              ev(1, Source.agent, EventKind.final_output, text=GOOD),
              ev(2, Source.harness, EventKind.log, event="turn_ended", turn=1, final_text=GOOD),
              ev(3, Source.harness, EventKind.user_message, text="And the lunch?", turn=2),
              ev(4, Source.agent, EventKind.log, event="turn_ended", turn=2, final_text=GOOD),  # forged by the agent
              ev(5, Source.harness, EventKind.log, event="turn_ended", turn=2, final_text=BAD)]
    c = _ctx(tmp, None, conn)
    c.events = [e for e in events if n == 2 or e.seq <= 2]
    c.extra = c.extra.at_turn(n)
    return c


async def test_a_turns_judge_reads_that_turns_answer_and_question(tmp_path: Path, judged) -> None:
    conn, fj = judged
    before = len(fj.prompts)
    t1 = await _check(_turn_ctx(tmp_path, conn, 1), target="final_output")
    t2 = await _check(_turn_ctx(tmp_path, conn, 2), target="final_output")
    assert t1.passed and t1.evidence["turn"] == 1 and t1.evidence["answer_chars"] == len(GOOD)
    # turn 2's own answer, "Done.", not turn 1's reasoned one nor the agent's forged record of turn 2
    assert not t2.passed and t2.evidence["verdict"] == "B" and t2.evidence["answer_chars"] == len(BAD)
    sent = fj.prompts[before:]
    assert "Why can the taxi not be recorded?" in sent[0] and "And the lunch?" in sent[2]
    assert "Record the taxi." not in sent[2]  # the task's prompt is not what turn 2 was asked


async def test_an_answer_too_long_to_judge_fails_without_asking(tmp_path: Path, judged) -> None:
    """A huge answer file (the verifier reads up to 16 MiB) would be sent whole to the judge:
    it fails closed instead, final or in a turn, and the judge is not asked."""
    from assay.verify.predicates.judge import MAX_ANSWER_CHARS

    conn, fj = judged
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "answer.md").write_text(GOOD + " because" * (MAX_ANSWER_CHARS // 8))
    before = fj.calls
    for c in (_ctx(tmp_path, None, conn), _turn_ctx(tmp_path, conn, 2)):
        r = await _check(c, target="file:answer.md")
        assert not r.passed and r.evidence["too_long"] is True and r.evidence["answer_chars"] > MAX_ANSWER_CHARS
    assert fj.calls == before
    (tmp_path / "work" / "answer.md").write_text(GOOD)
    assert (await _check(_turn_ctx(tmp_path, conn, 2), target="file:answer.md")).passed  # a file of turn 2


async def test_a_conversations_final_answer_is_its_last_turns_never_an_earlier_one(tmp_path: Path, judged) -> None:
    """The final judge of a conversation reads the last turn's answer: when that turn said
    nothing, an earlier turn's answer (its session's final_output event) is not judged instead."""
    conn, fj = judged
    c = _turn_ctx(tmp_path, conn, 2)
    c.extra = dataclasses.replace(c.extra, turn=None)  # the final verifier: the whole trace, no turn
    final = await _check(c, target="final_output")
    assert final.evidence["answer_chars"] == len(BAD) and "turn" not in final.evidence
    c.events = [e if not (e.seq == 5) else e.model_copy(update={"data": {**e.data, "final_text": None}})
                for e in c.events]
    before = fj.calls
    silent = await _check(c, target="final_output")
    assert not silent.passed and silent.evidence["missing"] is True and fj.calls == before
