"""SWE-bench's FAIL_TO_PASS / PASS_TO_PASS grading as a predicate: the repository's own tests run
in a sandbox of their own over a prepared copy of the final state (the hidden test patch
applied there, never in the agent's workspace). In-process trust: the tests import the agent's
code."""

from __future__ import annotations

import json
import os
import secrets

from assay.errors import VerifierError
from assay.records.results import Trust
from assay.spec.predicates import FailPassLists, PredicateSpec
from assay.verify import fail_pass_runner
from assay.verify.context import Outcome, VerifyContext, excerpt
from assay.verify.predicates.commands import verdict_outcome
from assay.verify.pytest_runner import NO_PYTEST
from assay.verify.pytest_verdict import records, shown_output
from assay.verify.registry import evaluator
from assay.verify.snapshot import copy_snapshot
from assay.verify.fail_pass import TooLarge, judge, plant_sentinels, prepare


@evaluator("test_lists", trust=Trust.in_process)
async def fail_pass_lists(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, FailPassLists)
    restore = ctx.resolve(spec.restore, base=ctx.hidden)
    if not restore.is_dir():  # the task's fault, never the agent's
        raise VerifierError(f"predicate {spec.id!r}: hidden/{spec.restore} does not exist", reason="verifier_setup")
    copy = ctx.root / "exec" / f"tests-{spec.id}-ws"
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy_snapshot(ctx.work, copy)
    try:
        changed = prepare(copy, restore, spec.deleted)
    except TooLarge as e:
        return Outcome(False, {"error": f"{e}: a planted conftest.py cannot be ruled out"})
    sentinels = plant_sentinels(copy, spec.fail_to_pass)
    site = await ctx.open_site(spec.id, snapshot=copy)
    nonce = secrets.token_hex(16)
    wanted = [*spec.fail_to_pass, *spec.pass_to_pass, *sentinels]
    argv = [ctx.python, "-I", "-B", fail_pass_runner.__file__, site.work, spec.inifile or "",
            os.pathsep.join(spec.pythonpath)]
    res = await site.sandbox.exec(argv, cwd=site.work, timeout_s=spec.timeout_s,
                                  env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
                                  stdin=f"{nonce}\n{json.dumps(wanted)}\n".encode())
    out = res.stdout.decode(errors="replace")
    recs, foreign = records(out, nonce)
    if res.exit_code == NO_PYTEST and not any(r.get("started") for r in recs):
        raise VerifierError(f"predicate {spec.id!r}: {res.stderr.decode(errors='replace').strip()[-300:]}",
                            reason="verifier_setup")
    verdict = judge(recs, foreign, spec.fail_to_pass, spec.pass_to_pass, sentinels, exit_code=res.exit_code,
                    predicate=spec.id)
    ev = {**verdict.evidence, "verifier_copy": changed,
          "output": excerpt(shown_output(out, set(sentinels))[-4000:], 4000)}
    return verdict_outcome(verdict, res, spec.timeout_s, ev)
