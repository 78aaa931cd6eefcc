"""The Python plugin predicate: task-author code, run in the verifier sandbox as its own process
so a crash or hang in it is a verifier error (infra_error), never a pass."""

from __future__ import annotations

import json
import secrets
import sys

from assay.errors import VerifierError
from assay.records.incident import incident
from assay.records.results import Trust
from assay.spec.predicates import PredicateSpec, PythonPlugin
from assay.verify import plugin_runner
from assay.verify.context import Outcome, VerifyContext, excerpt
from assay.verify.plugin_runner import RESULT_MARK
from assay.verify.registry import evaluator


@evaluator("python", trust=Trust.in_process)
async def python_plugin(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, PythonPlugin)
    payload_file = ctx.root / "exec" / f"plugin-{spec.id}.json"
    payload_file.parent.mkdir(exist_ok=True)
    site_paths = {"hidden": ctx.hidden, "code": ctx.code, "events": ctx.root / "events.jsonl", "input": payload_file}
    payload_file.write_text("{}")
    site = await ctx.open_site(spec.id, ro=site_paths)
    payload = {
        "work": site.work, "hidden": site.path("hidden"), "code": site.path("code"), "args": spec.args,
        "initial_digests": ctx.initial_digests, "final_digests": ctx.final_digests,
        "events": site.path("events"), "extra": ctx.extra.payload(),
    }
    payload_file.write_text(json.dumps(payload, default=str))
    nonce = secrets.token_hex(16)
    argv = [sys.executable, "-I", "-B", plugin_runner.__file__, f"{site.path('code')}/{spec.file}",
            spec.function, site.path("input")]
    res = await site.sandbox.exec(argv, cwd=site.work, timeout_s=ctx.task.spec.verifier_timeout_s,
                                  stdin=nonce.encode() + b"\n")
    if res.timed_out:
        raise VerifierError(f"plugin predicate {spec.id!r} timed out", reason="verifier_timeout")
    out = res.stdout.decode(errors="replace")
    lines = [ln for ln in out.splitlines() if ln.startswith(RESULT_MARK)]
    ours = [ln for ln in lines if ln.startswith(f"{RESULT_MARK}{nonce}:")]
    if len(lines) > 1 or (lines and not ours):  # somebody else printed a verdict
        return Outcome(False, {"tampering": f"{len(lines)} verdict line(s), {len(ours)} with the nonce",
                               "incidents": [incident("verifier_tampering", "critical",
                                                      "a forged plugin verdict was printed", predicate=spec.id)]})
    if res.exit_code != 0 or not ours:
        err = res.stderr.decode(errors="replace")
        raise VerifierError(f"plugin predicate {spec.id!r} crashed (exit {res.exit_code}): {excerpt(err[-2000:], 2000)}",
                            reason="verifier_crash")
    result = json.loads(ours[0][len(RESULT_MARK) + len(nonce) + 1:])
    return Outcome(bool(result["passed"]), dict(result.get("evidence") or {}))
