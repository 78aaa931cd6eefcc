"""The helper every server-starting test uses ends what it started on every path (issue 28: a
timed-out gateway test left `assay gateway serve` running 45 minutes after the suite)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.conftest import read_line_with, server_process

STUBBORN = """
import signal, subprocess, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)            # ignores the polite stop
child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(600)"])
print("PIDS", child.pid, flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_server_that_ignores_sigint_and_its_child_are_ended_when_the_test_fails() -> None:
    pids: list[int] = []
    with pytest.raises(AssertionError):
        with server_process([sys.executable, "-c", STUBBORN], grace_s=1, stdout=subprocess.PIPE, text=True) as p:
            line = read_line_with(p, "PIDS", 60)
            assert line
            pids = [p.pid, int(line.split()[1])]
            raise AssertionError("the test failed while its server ran")  # a failure or a pytest-timeout
    assert pids and not alive(pids[0])  # the leader is reaped by the helper itself
    deadline = time.monotonic() + 30  # the orphaned child is reaped by init once SIGKILL lands: bounded poll
    while alive(pids[1]) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(pids[1])


def test_a_silent_server_does_not_hang_the_read() -> None:
    with server_process([sys.executable, "-c", "import time; time.sleep(600)"], grace_s=1,
                        stdout=subprocess.PIPE, text=True) as p:
        assert read_line_with(p, "URL", 0.5) is None
    assert p.returncode is not None and os.waitid is not None
