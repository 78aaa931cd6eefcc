"""The Python plugin predicate: task-author code, run in the verifier sandbox as its own process
so a crash or hang in it is a verifier error (infra_error), never a pass."""

from __future__ import annotations

import json
import sys

from assay.errors import VerifierError
from assay.spec.predicates import PredicateSpec, PythonPlugin
from assay.verify.context import Outcome, VerifyContext, excerpt
from assay.verify.registry import evaluator

RESULT_MARK = "@@ASSAY_PLUGIN_RESULT@@"


@evaluator("python")
async def python_plugin(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, PythonPlugin)
    sb = await ctx.sandbox()
    root = sb.workspace_path
    payload = {
        "work": f"{root}/work", "hidden": f"{root}/hidden", "code": f"{root}/code", "args": spec.args,
        "initial_digests": ctx.initial_digests, "final_digests": ctx.final_digests,
        "events": f"{root}/events.jsonl", "extra": ctx.extra,
    }
    ctx_file = ctx.root / "out" / f"plugin-{spec.id}.json"
    ctx_file.parent.mkdir(exist_ok=True)
    ctx_file.write_text(json.dumps(payload, default=str))
    argv = [sys.executable, "-I", "-m", "assay.verify.plugin_runner", f"{root}/code/{spec.file}", spec.function,
            f"{root}/out/plugin-{spec.id}.json"]
    res = await sb.exec(argv, cwd=f"{root}/work", timeout_s=ctx.task.spec.verifier_timeout_s)
    if res.timed_out:
        raise VerifierError(f"plugin predicate {spec.id!r} timed out", reason="verifier_timeout")
    out = res.stdout.decode(errors="replace")
    line = next((ln for ln in reversed(out.splitlines()) if ln.startswith(RESULT_MARK)), None)
    if res.exit_code != 0 or line is None:
        err = res.stderr.decode(errors="replace")
        raise VerifierError(f"plugin predicate {spec.id!r} crashed (exit {res.exit_code}): {excerpt(err[-2000:], 2000)}",
                            reason="verifier_crash")
    result = json.loads(line[len(RESULT_MARK):])
    return Outcome(bool(result["passed"]), dict(result.get("evidence") or {}))
