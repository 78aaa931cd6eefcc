"""The ``io_cases`` evaluator: each case runs in the predicate's sandbox with its inputs only;
its outputs are compared here, against expected values that never enter the sandbox."""

from __future__ import annotations

import json
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError

from assay.errors import VerifierError
from assay.records.results import Trust
from assay.spec.io_predicates import IoCase, IoCases, check_case
from assay.spec.predicates import PredicateSpec
from assay.untrusted import bounded_re
from assay.untrusted.json_text import loads as loads_untrusted
from assay.untrusted.yaml_doc import load_yaml
from assay.verify import io_driver
from assay.verify.context import Outcome, PathEscape, VerifyContext, excerpt
from assay.verify.io_driver import MARK
from assay.verify.registry import evaluator


def load_cases(spec: IoCases, ctx: VerifyContext) -> list[IoCase]:
    """Inline cases, or the hidden cases file (a broken one is the task's fault: verifier_setup)."""
    if spec.cases_file is None:
        return list(spec.cases)
    try:
        path = ctx.resolve(spec.cases_file, base=ctx.hidden)
        cases = TypeAdapter(list[IoCase]).validate_python(load_yaml(path.read_text()))
        for c in cases:
            check_case(c, call=spec.call is not None)
    except (OSError, PathEscape, yaml.YAMLError, ValidationError, ValueError) as e:
        raise VerifierError(f"predicate {spec.id!r}: cases file hidden/{spec.cases_file}: {e}",
                            reason="verifier_setup") from e
    if not cases:
        raise VerifierError(f"predicate {spec.id!r}: cases file hidden/{spec.cases_file} has no cases",
                            reason="verifier_setup")
    return cases


def _same(want: Any, got: Any, tol: float) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return abs(want - got) <= tol
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(_same(a, b, tol) for a, b in zip(want, got))
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(_same(want[k], got[k], tol) for k in want)
    return bool(want == got)


def judge_call(case: IoCase, stdout: str, tol: float) -> tuple[bool, dict[str, Any]]:
    lines = [ln for ln in stdout.splitlines() if ln.startswith(MARK)]
    if not lines:
        return False, {"error": "the driver gave no outcome (the code under test ended it)"}
    if len(lines) > 1:  # the driver writes one: the others came from the code under test
        return False, {"error": f"{len(lines)} outcome lines: the code under test wrote to the driver's output"}
    try:
        got = loads_untrusted(lines[0][len(MARK):])
    except ValueError:
        got = None
    if not isinstance(got, dict):  # the code under test wrote it (the driver's is always an object)
        return False, {"error": "the outcome line is not the driver's", "line": excerpt(lines[0], 200)}
    if case.raises is not None:
        return got.get("raises") == case.raises, {"got": got, "expected_raises": case.raises}
    ok = "returns" in got and _same(json.loads(json.dumps(case.returns)), got["returns"], tol)
    return ok, {"got": excerpt(json.dumps(got, default=repr), 500)}


def judge_run(case: IoCase, stdout: str, exit_code: int | None) -> tuple[bool, dict[str, Any]]:
    ok = exit_code == case.exit_code
    if case.stdout is not None and stdout.strip() != case.stdout.strip():
        ok = False
    extra: dict[str, Any] = {}
    if case.stdout_matches is not None:
        try:
            ok = ok and bounded_re.fullmatch(case.stdout_matches, stdout.strip(), dotall=True) is not None
        except bounded_re.MatchTimeout:
            ok, extra = False, bounded_re.timed_out()
    return ok, {"exit_code": exit_code, "stdout": excerpt(stdout, 500), **extra}


@evaluator("io_cases", trust=Trust.outside_oracle)
async def io_cases(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, IoCases)
    cases = load_cases(spec, ctx)
    inputs = {f"{i:03d}/{rel}": text for i, c in enumerate(cases) for rel, text in c.files.items()}
    site = await ctx.open_site(spec.id, inputs=inputs)
    results, passed = [], 0
    for i, case in enumerate(cases):
        case_dir = f"{site.inputs}/{i:03d}"
        if spec.call is not None:
            module, function = spec.call.split(":", 1)
            argv = [ctx.python, "-I", "-B", io_driver.__file__, module, function]
            stdin = json.dumps({"args": case.args, "kwargs": case.kwargs}) + "\n"
        else:
            assert spec.run is not None
            words = [*spec.run, *(str(a) for a in case.args)]
            argv = [w.replace("{python}", ctx.python).replace("{case_dir}", case_dir) for w in words]
            stdin = case.stdin
        res = await site.sandbox.exec(argv, cwd=site.work, timeout_s=spec.timeout_s,
                                      stdin=stdin.encode() if stdin is not None else None)
        out = res.stdout.decode(errors="replace")
        if res.timed_out:
            ok, ev = False, {"timed_out": True}
        elif spec.call is not None:
            ok, ev = judge_call(case, out, spec.tolerance)
        else:
            ok, ev = judge_run(case, out, res.exit_code)
        if not ok:
            ev["stderr"] = excerpt(res.stderr.decode(errors="replace")[-1000:], 1000)
        passed += ok
        results.append({"case": case.id, "passed": ok, **ev})
    return Outcome(passed == len(cases), {"cases": len(cases), "passed": passed,
                                          "failed": [r for r in results if not r["passed"]][:20]})
