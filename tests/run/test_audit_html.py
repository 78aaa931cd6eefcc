"""The suite audit's HTML page: the same table and evidence as its Markdown, every value escaped
(task ids, evidence and test output come from the tasks and their runs)."""

from __future__ import annotations

import re
from html import unescape

from assay.run.audit import AuditReport, TaskAudit
from assay.run.audit_html import audit_html

HOSTILE = "oracle fails predicate 'tests': <script>alert(1)</script> | & \"q\""


def _report() -> AuditReport:
    return AuditReport("s<u>", "1.0", [
        TaskAudit("ok", "valid", oracle="pass", nop="fail", mutants_tried=3),
        TaskAudit("bad", "unsolvable as shipped", evidence=[HOSTILE], oracle="fail", nop="fail"),
        TaskAudit("net", "needs", needs=["tests/test.sh fetches from the network"], oracle="fail", nop="fail"),
    ])


def test_html_escapes_everything_and_shows_the_same_rows_as_markdown() -> None:
    rep = _report()
    page = audit_html(rep)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "s&lt;u&gt;" in page
    text = unescape(re.sub(r"<[^>]+>", "\t", page))
    for row in rep.table():
        assert all(c in text for c in row)
    md = rep.to_markdown()
    assert "valid: 1, weak: 0, unsolvable as shipped: 1, needs: 1, no reference solution: 0" in md and rep.summary() in text
    assert '<a href="#task-bad">bad</a>' in page and 'id="task-net"' in page and 'href="#task-ok"' not in page
    assert "needs: tests/test.sh fetches from the network" in text and HOSTILE in text


def test_a_task_whose_runs_hold_but_lint_finds_an_answer_key_is_weak() -> None:
    """The oracle passes, the do-nothing agent fails, no mutant survives, and yet the image bakes
    the expected value where the agent reads it: `weak`, with the lint line as its evidence."""
    from assay.records.results import AttemptResult, EndState
    from assay.run.audit import label
    from assay.run.validate import TaskVerdict

    passed, failed = (AttemptResult.model_construct(end_state=s) for s in (EndState.passed, EndState.failed))
    lint = ("lint: t: hidden_readable hidden/tests/test_outputs.py: the hidden tests read /opt/answer.txt, which the "
            "image writes outside the workspace where the agent can read it")
    clean = TaskVerdict("t", "base", oracle=passed, nop=failed)
    assert label(clean, True, []).label == "valid"
    keyed = TaskVerdict("t", "base", oracle=passed, nop=failed, problems=[lint])
    audit = label(keyed, True, [])
    assert audit.label == "weak" and audit.evidence == [lint]


def test_an_oracle_failure_shows_what_was_approximated_beside_it() -> None:
    """A real EvoEval task's reference fails here only because the benchmark's Python 3.13 image is
    read as Debian's 3.11 (sum() of floats is compensated since 3.12): the label stays what the
    runs showed, and the approximation stands beside the failure as a possible cause."""
    from assay.records.results import AttemptResult, EndState
    from assay.run.audit import label
    from assay.run.validate import TaskVerdict

    failed = AttemptResult.model_construct(end_state=EndState.failed)
    why = "oracle fails predicate 'pytest-test_outputs' (pytest): Expected 2.55, got 2.5499999999999994"
    mapped = "FROM python-3-13 mapped to debian:bookworm with Debian's python3 (its Python version may differ)"
    audit = label(TaskVerdict("4", "base", oracle=failed, nop=failed, problems=[why]), True, [], [mapped])
    assert audit.label == "unsolvable as shipped"
    assert audit.evidence == [why, f"approximated here, which may be the cause rather than the task: {mapped}"]
    assert label(TaskVerdict("4", "base", oracle=failed, nop=failed, problems=[why]), True, []).evidence == [why]


def test_lint_findings_stand_beside_any_label_and_a_need_is_said_once() -> None:
    """A task whose oracle fails for want of the network and whose image also bakes its answer:
    `needs`, the need said once (not again as an approximation), and the lint line kept."""
    from assay.records.results import AttemptResult, EndState
    from assay.run.audit import label
    from assay.run.validate import TaskVerdict

    failed = AttemptResult.model_construct(end_state=EndState.failed)
    need = "tests/test.sh fetches from the network at test time"
    lint = "lint: t: hidden_readable hidden/tests/test_outputs.py: the hidden tests read /opt/answer_truth.txt"
    v = TaskVerdict("t", "base", oracle=failed, nop=failed, problems=["oracle fails predicate 'reward'", lint])
    audit = label(v, True, [need], [f"could not map: {need}", "FROM ubuntu:24.04 mapped to debian:bookworm"])
    assert audit.label == "needs" and audit.needs == [need]
    assert audit.evidence == ["oracle fails predicate 'reward'", "approximated here, which may be the cause rather "
                              "than the task: FROM ubuntu:24.04 mapped to debian:bookworm", lint]
