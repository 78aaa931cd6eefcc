"""The reward protocol (Harbor, Terminal-Bench 2): the task's own test script runs in a sandbox of
its own over the snapshot, inside the task's image, with its test files at ``/tests`` and a
writable ``/logs/verifier``; it writes ``reward.txt`` (one number) or ``reward.json`` (numbers by
name). Terminal-Bench 1's ``run-tests.sh`` (``reads: pytest_summary``) is judged by the test
results its standard output lists instead. The script runs over agent-written state, so the
verdict is in-process trust, and what it leaves in ``/logs/verifier`` is read as hostile (no link
followed, size bounded)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import stat
from pathlib import Path

from assay.errors import VerifierError
from assay.records.results import Trust
from assay.spec.predicates import PredicateSpec, RewardFile
from assay.spec.task_env import ShebangError, interpreter
from assay.verify.context import Outcome, VerifyContext, excerpt
from assay.verify.registry import evaluator
from assay.verify.site import TARGETS

MAX_REWARD_BYTES = 64 << 10
#: Terminal-Bench 1's pytest parser: the results are the lines after the heading
#: ``=+\s*short test summary info\s*=+`` (matched case-insensitively), read by :func:`after_summary_heading`
_PHRASE = re.compile(r"short test summary info", re.IGNORECASE)
#: its statuses, and what each counts as (a skip and an xfail pass there, an xpass fails)
_STATUS = {"PASSED": "passed", "SKIPPED": "passed", "XFAIL": "passed", "FAILED": "failed", "ERROR": "failed",
           "XPASS": "failed"}


def after_summary_heading(output: str) -> str | None:
    """What follows the first heading ``=+\s*short test summary info\s*=+`` (None: there is none),
    found in linear time. The pattern itself tried every ``=`` of a run of them against the rest of
    the run (160,000 took four minutes, in the harness's process, on output the agent can fill).
    Here each occurrence of the phrase is looked at once: whitespace then at least one ``=`` before
    it, whitespace then the run of ``=`` after it, as the pattern's greedy parts take them."""
    for m in _PHRASE.finditer(output):
        before = m.start()
        while before > 0 and output[before - 1].isspace():
            before -= 1
        if before == 0 or output[before - 1] != "=":
            continue
        after = m.end()
        while after < len(output) and output[after].isspace():
            after += 1
        if after == len(output) or output[after] != "=":
            continue
        while after < len(output) and output[after] == "=":
            after += 1
        return output[after:]
    return None


def pytest_summary(output: str) -> dict[str, str] | None:
    """The test results a script printed, read as Terminal-Bench 1's ``PytestParser`` reads them
    (its verdict on ``run-tests.sh``): after the first 'short test summary info' heading, each line
    ``STATUS name`` (a FAILED line's last `` - reason`` dropped, a ``path::`` prefix dropped); other
    lines are ignored. None: no such heading (the parser's error, an unresolved task there)."""
    rest = after_summary_heading(output)
    if rest is None:
        return None
    results: dict[str, str] = {}
    for line in rest.splitlines():
        if line.startswith("FAILED") and " - " in line:
            line = " - ".join(line.split(" - ")[:-1])
        words = line.split(maxsplit=1)
        if len(words) < 2 or words[0].strip().strip(":") not in _STATUS:
            continue
        name = words[1].strip().split("::", 1)[-1]
        if name:
            results[name] = _STATUS[words[0].strip().strip(":")]
    return results


def read_reward(logs: Path) -> tuple[dict[str, float] | None, str]:
    """The rewards the script wrote (``{"reward": x}`` for reward.txt), or None and why not."""
    for name in ("reward.txt", "reward.json"):
        p = logs / name
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            continue
        except OSError as e:
            return None, f"{name} could not be read ({e.strerror})"
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None, f"{name} is not a regular file"
            raw = os.read(fd, MAX_REWARD_BYTES + 1)
        finally:
            os.close(fd)
        if len(raw) > MAX_REWARD_BYTES:
            return None, f"{name} is over {MAX_REWARD_BYTES} bytes"
        text = raw.decode(errors="replace").strip()
        try:
            if name == "reward.txt":
                values = {"reward": float(text)}
            else:
                data = json.loads(text)
                if not isinstance(data, dict) or not data:
                    return None, "reward.json is not an object of numbers"
                values = {str(k): float(v) for k, v in data.items()}
        except (ValueError, TypeError):
            return None, f"{name} holds {excerpt(text, 80)!r}, not a number"
        if any(math.isnan(v) for v in values.values()):
            return None, f"{name} holds NaN"
        return values, name
    return None, "the script wrote no /logs/verifier/reward.txt or reward.json"


def locked_against_writes(logs: Path) -> str | None:
    """Why the reward cannot be the script's own verdict, when the folder or a reward file lost its
    owner's write permission: code the script ran (the agent's) wrote a reward and made it
    read-only, so the script's own ``echo 0 >`` failed and the script still ended normally. An
    honest script never takes the write permission away from itself."""
    for path in (logs, logs / "reward.txt", logs / "reward.json"):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if not mode & stat.S_IWUSR:
            name = "the reward folder" if path == logs else path.name
            return (f"{name} was made read-only (mode {stat.S_IMODE(mode):o}) while the script ran: a reward "
                    "written there cannot have been overwritten by the script, so it is not its verdict")
    return None


def passed(values: dict[str, float], spec: RewardFile) -> tuple[bool, str | None]:
    """Pass: the named value (or every value) reaches the threshold; a missing key is a fail."""
    if spec.key is not None:
        if spec.key not in values:
            return False, f"reward.json has no {spec.key!r}"
        return values[spec.key] >= spec.threshold, None
    return all(v >= spec.threshold for v in values.values()), None


def _script(spec: RewardFile, ctx: VerifyContext) -> tuple[Path, dict[str, Path]]:
    """The script (host path, to read its #! line) and what is mounted for it: the task's hidden
    tests copied and mounted at /tests, or nothing when the verifier's image holds them there
    itself (``tests: null``, Harbor's separate verifier). A missing script is the task's fault,
    never the agent's."""
    if spec.tests is None:
        inside = f"{TARGETS['tests']}/{spec.script}"
        found = ctx.image_file(inside)
        if found is None:
            raise VerifierError(f"predicate {spec.id!r}: the verifier's image has no {inside} (its Dockerfile must "
                                "put the script there)", reason="verifier_setup")
        return found, {}
    tests = ctx.resolve(spec.tests, base=ctx.hidden)
    if not (tests / spec.script).is_file():
        raise VerifierError(f"predicate {spec.id!r}: hidden/{spec.tests}/{spec.script} does not exist",
                            reason="verifier_setup")
    copy = ctx.root / "exec" / f"reward-{spec.id}-tests"
    shutil.copytree(tests, copy, symlinks=True)
    # the script is pinned by its host path (reward_file): where a link leads, inside the copy only
    script = Path(os.path.realpath(copy / spec.script))
    if not script.is_relative_to(copy.resolve()) or not script.is_file():
        raise VerifierError(f"predicate {spec.id!r}: hidden/{spec.tests}/{spec.script} is a link leading out of "
                            f"hidden/{spec.tests}; replace it with the file", reason="verifier_setup")
    return script, {"tests": copy}


@evaluator("reward_file", trust=Trust.in_process)
async def reward_file(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, RewardFile)
    script, ro = _script(spec, ctx)
    logs = ctx.root / "exec" / f"reward-{spec.id}-logs"
    logs.mkdir(parents=True)
    logs.chmod(0o755)  # whatever the umask: the script's to write, and read-only only if someone made it so
    try:
        argv = interpreter(script)
    except ShebangError as e:
        return Outcome(False, {"script": spec.script, "error": str(e)})
    # the tests' copy is the script's to write in; the script itself is pinned as shipped
    pinned = {f"{TARGETS['tests']}/{spec.script}": script} if "tests" in ro else None  # the file it leads to
    site = await ctx.open_site(spec.id, ro={**ro, "logs": logs}, pinned=pinned)
    where = site.path("tests") if "tests" in ro else TARGETS["tests"]
    res = await site.sandbox.exec([*argv, f"{where}/{spec.script}"], cwd=site.work,
                                  timeout_s=spec.timeout_s)
    shown = f"{spec.tests}/{spec.script}" if spec.tests is not None else f"{where}/{spec.script} (the verifier's image)"
    ev = {"script": shown, "exit_code": res.exit_code, "threshold": spec.threshold,
          "stdout": excerpt(res.stdout.decode(errors="replace")[-2000:], 2000),
          "stderr": excerpt(res.stderr.decode(errors="replace")[-2000:], 2000)}
    if res.timed_out:
        return Outcome(False, {**ev, "timed_out": True, "timeout_s": spec.timeout_s})
    if res.signal is not None or res.exit_code < 0:
        # the script never finished, so it decided nothing: code it ran (the agent's) may have written
        # the reward, or the summary, and then killed it before it could write its own
        sig = res.signal if res.signal is not None else -res.exit_code
        return Outcome(False, {**ev, "error": f"the test script was killed by signal {sig} before it finished: "
                                              "what it left is not its verdict"})
    if spec.reads == "pytest_summary":
        return _summary_outcome(res.stdout.decode(errors="replace"), ev)
    if (locked := locked_against_writes(logs)) is not None:
        return Outcome(False, {**ev, "error": locked})
    values, where = read_reward(logs)
    if values is None:
        return Outcome(False, {**ev, "error": where})
    ok, why = passed(values, spec)
    return Outcome(ok, {**ev, "reward_file": where, "rewards": values, **({"error": why} if why else {})})


def _summary_outcome(stdout: str, ev: dict[str, object]) -> Outcome:
    """Pass: the output lists at least one result and every one passed (Terminal-Bench 1 passes an
    empty list; a summary naming no test proves nothing here, so it fails)."""
    results = pytest_summary(stdout)
    if results is None:
        return Outcome(False, {**ev, "error": "the script printed no 'short test summary info' section"})
    if not results:
        return Outcome(False, {**ev, "tests": {}, "error": "the summary lists no test result"})
    failed = sorted(k for k, v in results.items() if v != "passed")
    return Outcome(not failed, {**ev, "tests": dict(list(results.items())[:200]),
                                "summary": f"{len(results) - len(failed)}/{len(results)} passed",
                                **({"failed": failed[:50]} if failed else {})})
