"""An injected kill ends every process the agent started in the sandbox, not only its process
group (docs/recovery.md): a daemon that ``setsid``s out of the group before the agent is killed
must be gone before the agent starts again, and must write nothing after that.

Hostile: the daemon runs inside the bubblewrap sandbox, and the whole run inside the test's own
pid namespace (:func:`tests.sandbox.walled.run_walled`), so a daemon that escaped everything
still dies with it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.recovery.command_agents import BOOK, command_agent
from tests.recovery.test_recovery_e2e import _final_results
from tests.sandbox.walled import run_walled, unshare_available

SUITE = Path(__file__).resolve().parents[2] / "examples" / "recovery"

#: run 1 starts a daemon in a session of its own (out of the agent's process group) that appends
#: to the workspace, waits until it has written once, then books the entry (and is killed there);
#: run 2 says whether the daemon still lives and whether it wrote after run 2 started
DAEMONER = command_agent("daemoner", r'''\
import json, os, pathlib, subprocess, sys, urllib.request
HOME = pathlib.Path(__file__).resolve().parent
LOG = pathlib.Path("daemon.log").resolve()
DAEMON = ("import sys, time\n"
          "n = 0\n"
          "while True:\n"
          "    n += 1\n"
          "    with open(sys.argv[1], 'a') as f:\n"
          "        f.write('tick %d\\n' % n)\n"
          "    if n == 1:\n"
          "        print('ready', flush=True)\n"
          "    time.sleep(0.01)\n")
pidfile = HOME / "daemon.pid"


def alive(pid):
    try:
        state = pathlib.Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


''' + BOOK + r'''

if not pidfile.exists():  # run 1
    d = subprocess.Popen([sys.executable, "-c", DAEMON, str(LOG)], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert d.stdout.readline().strip() == b"ready"  # it has written once: it is running
    pidfile.write_text(str(d.pid))
    print("run 1: daemon %d in session %d, mine %d" % (d.pid, os.getsid(d.pid), os.getsid(0)), flush=True)
    book()  # killed while this call is answered
    print("run 1: not killed", flush=True)
else:  # run 2
    pid = int(pidfile.read_text())
    size = LOG.stat().st_size
    print("run 2: daemon alive %s" % alive(pid), flush=True)
    answer = book()
    print("run 2: replayed %s" % (answer.get("result") or {}).get("replayed"), flush=True)
    print("run 2: daemon alive at the end %s, wrote after restart %s" % (alive(pid), LOG.stat().st_size != size),
          flush=True)
''')


def _only(suite: Path, task: str, keep: set[str]) -> None:
    path = suite / "tasks" / task / "task.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["variants"] = [v for v in spec["variants"] if v["id"] in keep]
    path.write_text(yaml.safe_dump(spec, sort_keys=False))


def _trace(run: Path, trial: str) -> list[dict]:
    return [json.loads(line) for line in (run / "trials" / trial / "trace.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.skipif(not unshare_available(), reason="the second wall needs root and unshare")
def test_a_daemon_that_left_the_process_group_dies_with_the_killed_agent(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite)
    _only(suite, "book-entry", {"fault-agent-killed"})
    agent = tmp_path / "daemoner.yaml"
    agent.write_text(DAEMONER)
    run = tmp_path / "run"
    run_walled(f"""
        from assay.run import RunOptions, start_run
        start_run(RunOptions(suite=Path({str(suite)!r}), out=Path({str(run)!r}), agents=[{str(agent)!r}],
                             tasks=["book-entry"], sandbox="bwrap"))
        answer({{"done": True}})
    """, timeout=300)
    trial = "book-entry.fault-agent-killed.daemoner.r1"
    r = _final_results(run)[trial]
    out = next(e["data"]["stdout_tail"] for e in _trace(run, trial) if e["kind"] == "process_output")
    assert "run 2: daemon alive False" in out, out  # gone before the restart
    assert "run 2: daemon alive at the end False, wrote after restart False" in out, out
    assert "run 2: replayed True" in out
    (fault,) = r["extra"]["process_faults"]
    assert fault["applied"] and fault["ended_processes"] >= 1  # the daemon, killed by the harness
    assert not [i for i in r["incidents"] if i["type"] == "left_behind_process"], r["incidents"]
    assert r["end_state"] == "pass", (r["reason"], r["errors"])
