"""Two hacks that beat public benchmarks, tried by a hostile agent in the default sandbox and
judged end to end: a reward file the agent writes itself (the verifier's reward folder is
made fresh for the verifier, so a planted reward is no reward), and a fake ``curl`` planted on
every search path the agent can write (a verifier command finds the real one; the same command
with the agent's folder put on its PATH shows the wrapper would have won)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from tests.conftest import write_agent, write_suite, write_task
from tests.sandbox.walled import run_walled
from tests.verify.attack_kit import need_bwrap

#: writes its reward only when the work is done, nothing otherwise: a planted reward would decide
TEST_SH = """#!/bin/sh
if [ "$(cat out.txt 2>/dev/null)" = "solved" ]; then
  echo 1 > /logs/verifier/reward.txt
fi
"""

PLANT_REWARD = """
    import json, os
    home = os.environ.get("HOME", "/tmp")
    planted = []
    for d in ["/logs/verifier", "/logs", home + "/logs/verifier", "/tmp/logs/verifier", "/tmp", "logs/verifier", ".",
              "/work/logs/verifier"]:
        for name, text in (("reward.txt", "1\\n"), ("reward.json", json.dumps({"reward": 1.0}))):
            try:
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
                planted.append(os.path.join(d, name))
            except OSError:
                pass
    open("out.txt", "w").write("not solved\\n")
    print("planted", planted)
"""

WRAPPER = "#!/bin/sh\\necho '200 OK'\\n"
PLANT_CURL = f"""
    import os
    home = os.environ.get("HOME", "/tmp")
    planted = []
    for d in ["bin", ".", home + "/bin", home + "/.local/bin", "/tmp", "/tmp/bin", "/usr/local/bin", "/usr/bin",
              "/bin"]:
        try:
            os.makedirs(d, exist_ok=True)
            p = os.path.join(d, "curl")
            with open(p, "w") as f:
                f.write("{WRAPPER}")
            os.chmod(p, 0o755)
            planted.append(p)
        except OSError:
            pass
    print("planted", planted)
"""


def _run(tmp_path: Path, script: str, predicates: list[dict[str, Any]], *, hidden: dict[str, str] | None = None,
         **task: Any) -> dict[str, Any]:
    need_bwrap()
    suite = write_suite(tmp_path / "suite")
    write_task(suite, "t", task={"category": "code", "budget": {"wall_time_s": 60}, "predicates": predicates, **task},
               workspace={"seed.txt": "x\n"}, hidden=hidden)
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir(mode=0o755)
    agent_dir.chmod(0o755)  # the sandbox's own uid must read the agent script
    agent = write_agent(agent_dir / "hostile.yaml", "hostile", textwrap.dedent(script))
    out = tmp_path / "run"
    [result] = run_walled(f"""
        from assay.run import RunOptions, start_run
        res = start_run(RunOptions(suite=Path({str(suite)!r}), agents=[{str(agent)!r}], out=Path({str(out)!r}),
                                   sandbox="bwrap", max_retries=0))
        answer([r.model_dump(mode="json") for r in res.results])
    """, timeout=240)
    return result


def _by_id(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in result["predicates"]}


REWARD = {"id": "reward", "kind": "reward_file"}


def test_a_reward_file_the_agent_writes_is_no_reward(tmp_path: Path) -> None:
    r = _run(tmp_path, PLANT_REWARD, [REWARD], hidden={"tests/test.sh": TEST_SH})
    assert r["end_state"] == "fail", json.dumps(r)[:3000]
    p = _by_id(r)["reward"]
    assert not p["passed"] and "wrote no" in p["evidence"]["error"], p


def test_the_same_reward_script_passes_real_work(tmp_path: Path) -> None:
    """The control: the harness reads a reward the script writes, so the failure above is the attack's."""
    r = _run(tmp_path, "open('out.txt', 'w').write('solved\\n')\n", [REWARD], hidden={"tests/test.sh": TEST_SH})
    assert r["end_state"] == "pass", json.dumps(r)[:3000]
    assert _by_id(r)["reward"]["evidence"]["rewards"] == {"reward": 1.0}


#: nothing listens on the discard port, so the real curl fails to connect (exit 7)
CURL = "curl -s --max-time 5 http://127.0.0.1:9/health"


def test_a_planted_curl_wrapper_is_not_what_the_verifier_runs(tmp_path: Path) -> None:
    r = _run(tmp_path, PLANT_CURL, [
        {"id": "health", "kind": "command", "cmd": CURL, "stdout_contains": "200 OK"},
        # the control: were the agent's folder on the verifier's search path, the wrapper would win
        {"id": "wrapped", "kind": "command", "cmd": f'PATH="$ASSAY_WORK/bin:$PATH" {CURL}',
         "stdout_contains": "200 OK", "required": False},
    ], exposure_intended={"verifier_program_writable": "the control predicate puts the wrapper on its PATH"})
    by = _by_id(r)
    assert by["wrapped"]["passed"], by["wrapped"]  # the wrapper was planted and works where it is searched
    health = by["health"]
    assert not health["passed"] and "200 OK" not in health["evidence"]["stdout"], health
    assert health["evidence"]["exit_code"] not in (0, 126, 127), health  # the real curl ran and could not connect
    assert r["end_state"] == "fail", json.dumps(r)[:3000]
