"""Evaluators that run commands in the verifier's own sandbox: shell checks and hidden pytest."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET

from assay.errors import VerifierError
from assay.spec.predicates import CommandCheck, PredicateSpec, PytestCheck
from assay.verify.context import Outcome, VerifyContext, excerpt
from assay.verify.pytest_runner import NO_PYTEST
from assay.verify.registry import evaluator


def _inside(sandbox_root: str, sub: str) -> str:
    return f"{sandbox_root}/{sub}"


@evaluator("command")
async def command(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, CommandCheck)
    sb = await ctx.sandbox()
    root = sb.workspace_path
    cwd = _inside(root, "work" if spec.cwd == "workspace" else "hidden")
    argv = ["/bin/sh", "-c", spec.cmd] if isinstance(spec.cmd, str) else list(spec.cmd)
    env = {"ASSAY_WORK": _inside(root, "work"), "ASSAY_HIDDEN": _inside(root, "hidden"), "PYTHON": sys.executable}
    res = await sb.exec(argv, env=env, cwd=cwd, timeout_s=spec.timeout_s)
    if res.timed_out:
        raise VerifierError(f"predicate {spec.id!r}: command timed out after {spec.timeout_s}s", reason="verifier_timeout")
    out = res.stdout.decode(errors="replace")
    err = res.stderr.decode(errors="replace")
    ev = {"cmd": spec.cmd, "exit_code": res.exit_code, "stdout": excerpt(out, 2000), "stderr": excerpt(err, 2000)}
    ok = True
    if spec.expect_exit is not None and res.exit_code != spec.expect_exit:
        ok = False
    if spec.stdout_contains is not None and spec.stdout_contains not in out:
        ok = False
    if spec.stdout_matches is not None and not re.search(spec.stdout_matches, out, re.MULTILINE):
        ok = False
    return Outcome(ok, ev)


def parse_junit(xml_text: str) -> dict[str, int]:
    """Totals from a JUnit XML report (pytest's format)."""
    root = ET.fromstring(xml_text)
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for s in suites:
        for k in totals:
            totals[k] += int(s.get(k, "0") or 0)
    return totals


@evaluator("pytest")
async def pytest_check(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, PytestCheck)
    sb = await ctx.sandbox()
    root = sb.workspace_path
    junit_rel = f"out/junit-{spec.id}.xml"
    (ctx.root / "out").mkdir(exist_ok=True)
    argv = [sys.executable, "-I", "-m", "assay.verify.pytest_runner", _inside(root, "work"), _inside(root, "hidden"),
            spec.tests, _inside(root, junit_rel)]
    res = await sb.exec(argv, cwd=_inside(root, "hidden"), timeout_s=spec.timeout_s)
    if res.timed_out:
        raise VerifierError(f"predicate {spec.id!r}: hidden tests timed out after {spec.timeout_s}s", reason="verifier_timeout")
    if res.exit_code == NO_PYTEST:
        raise VerifierError(f"predicate {spec.id!r}: {res.stderr.decode(errors='replace').strip()[-300:]}",
                            reason="verifier_setup")
    out = res.stdout.decode(errors="replace")
    ev: dict[str, object] = {"tests": spec.tests, "exit_code": res.exit_code, "output": excerpt(out[-4000:], 4000)}
    junit = ctx.root / junit_rel
    if res.exit_code not in (0, 1):
        # 2..5: interrupted, internal error, usage error, no tests: the tests did not run properly
        ev["stderr"] = excerpt(res.stderr.decode(errors="replace"), 2000)
        return Outcome(False, ev)
    if not junit.is_file():
        ev["junit"] = "missing"
        return Outcome(False, ev)
    try:
        totals = parse_junit(junit.read_text())
    except ET.ParseError as e:
        ev["junit"] = f"unreadable: {e}"
        return Outcome(False, ev)
    ev.update(totals)
    ok = (res.exit_code == 0 and totals["failures"] == 0 and totals["errors"] == 0
          and totals["tests"] - totals["skipped"] >= spec.min_tests)
    return Outcome(ok, ev)
