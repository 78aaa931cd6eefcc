"""Evaluators that run code in a sandbox of their own over a fresh copy of the snapshot: shell
checks and hidden pytest. Hidden files are mounted read-only; verdicts are decided here."""

from __future__ import annotations

import secrets
import shutil
from typing import Any

from assay.errors import VerifierError
from assay.records.results import Trust
from assay.spec.predicates import CommandCheck, PredicateSpec, PytestCheck
from assay.untrusted import bounded_re
from assay.verify import pytest_runner
from assay.verify.context import Outcome, VerifyContext, excerpt
from assay.verify.pytest_runner import NO_PYTEST
from assay.verify.pytest_verdict import Verdict, expected_ids, judge, plant_sentinels, records, shown_output
from assay.verify.registry import evaluator


@evaluator("command", trust=Trust.in_process)
async def command(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, CommandCheck)
    argv = ["/bin/sh", "-c", spec.cmd] if isinstance(spec.cmd, str) else list(spec.cmd)
    # hidden files are mounted only for a command that asks for them: what the agent's code can
    # read, it can copy
    wants_hidden = spec.cwd == "hidden" or any("ASSAY_HIDDEN" in a for a in argv)
    site = await ctx.open_site(spec.id, ro={"hidden": ctx.hidden} if wants_hidden else {})
    cwd = site.path("hidden") if spec.cwd == "hidden" else site.work
    env = {"ASSAY_WORK": site.work, "PYTHON": ctx.python,
           **({"ASSAY_HIDDEN": site.path("hidden")} if wants_hidden else {})}
    res = await site.sandbox.exec(argv, env=env, cwd=cwd, timeout_s=spec.timeout_s)
    out = res.stdout.decode(errors="replace")
    err = res.stderr.decode(errors="replace")
    ev = {"cmd": spec.cmd, "exit_code": res.exit_code, "stdout": excerpt(out, 2000), "stderr": excerpt(err, 2000)}
    if res.timed_out:  # the code under test hung: its failure, not the harness's
        return Outcome(False, {**ev, "timed_out": True, "timeout_s": spec.timeout_s})
    ok = True
    if spec.expect_exit is not None and res.exit_code != spec.expect_exit:
        ok = False
    if spec.stdout_contains is not None and spec.stdout_contains not in out:
        ok = False
    if spec.stdout_matches is not None:
        try:
            ok = ok and bounded_re.search(spec.stdout_matches, out, multiline=True) is not None
        except bounded_re.MatchTimeout:
            ok, ev = False, {**ev, **bounded_re.timed_out()}
    return Outcome(ok, ev)


@evaluator("pytest", trust=Trust.in_process)
async def pytest_check(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, PytestCheck)
    expected = expected_ids(ctx.hidden, spec.tests)
    tests_copy = ctx.root / "exec" / f"pytest-{spec.id}-hidden"
    shutil.copytree(ctx.hidden, tests_copy, symlinks=True)
    sentinels = plant_sentinels(tests_copy, spec.tests, expected)
    site = await ctx.open_site(spec.id, ro={"hidden": tests_copy})
    nonce = secrets.token_hex(16)
    argv = [ctx.python, "-I", "-B", pytest_runner.__file__, site.work, site.path("hidden"), spec.tests]
    res = await site.sandbox.exec(argv, cwd=site.path("hidden"), timeout_s=spec.timeout_s,
                                  env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, stdin=nonce.encode() + b"\n")
    out = res.stdout.decode(errors="replace")
    recs, foreign = records(out, nonce)
    started = any(r.get("started") for r in recs)
    if res.exit_code == NO_PYTEST and not started:
        raise VerifierError(f"predicate {spec.id!r}: {res.stderr.decode(errors='replace').strip()[-300:]}",
                            reason="verifier_setup")
    verdict = judge(recs, foreign, expected, sentinels, exit_code=res.exit_code, min_tests=spec.min_tests,
                    predicate=spec.id)
    shown = shown_output(out, sentinels)
    ev = {"tests": spec.tests, "output": excerpt(shown[-4000:], 4000), **verdict.evidence}
    return verdict_outcome(verdict, res, spec.timeout_s, ev)


def verdict_outcome(verdict: Verdict, res: Any, timeout_s: float, ev: dict[str, Any]) -> Outcome:
    """A pytest grader's outcome: its verdict, a timeout (never a pass), stderr when it failed and
    its incidents, added to the evidence ``ev`` (the hidden-pytest and FAIL_TO_PASS predicates)."""
    if res.timed_out:
        ev.update({"timed_out": True, "timeout_s": timeout_s})
    if not verdict.passed:
        ev["stderr"] = excerpt(res.stderr.decode(errors="replace")[-2000:], 2000)
    if verdict.incidents:
        ev["incidents"] = verdict.incidents
    return Outcome(verdict.passed and not res.timed_out, ev)
