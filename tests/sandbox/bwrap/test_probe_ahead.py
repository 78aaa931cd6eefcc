"""The bwrap probe started ahead (a run begins it as it starts, so the probe's sandbox is made while
the suite loads): the answer is the one a probe asked at the time gives, one sandbox is made for
both, a failing probe still says why, and a process that ends meanwhile leaves nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from assay.sandbox.base import SandboxSpec
from assay.sandbox.bwrap import probe as probe_mod
from assay.sandbox.bwrap.backend import BwrapBackend


@pytest.fixture
def fresh_probe(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The probe's process-wide answer forgotten (restored after), and each probe sandbox counted."""
    monkeypatch.setattr(probe_mod, "_cached", None)
    monkeypatch.setattr(probe_mod, "_ahead", None)
    made: list[str] = []
    real = probe_mod._try

    async def counted(backend: BwrapBackend) -> str | None:
        made.append(threading.current_thread().name)
        return await real(backend)

    monkeypatch.setattr(probe_mod, "_try", counted)
    return made


def test_the_probe_started_ahead_is_the_answer_and_the_only_sandbox(fresh_probe: list[str]) -> None:
    backend = BwrapBackend()
    if backend.binary is None:
        pytest.skip("no bwrap here")
    backend.status_ahead()
    backend.status_ahead()  # a second start while one runs starts nothing
    ahead = backend.status()
    assert fresh_probe == ["assay-bwrap-probe"]  # made once, in the probe's own thread
    assert ahead.usable, ahead.detail
    assert backend.status() is ahead  # cached for the process, as without the ahead start
    backend.status_ahead()  # known already: nothing is started
    assert fresh_probe == ["assay-bwrap-probe"]
    asked_now = probe_mod.probe(backend, backend.binary, refresh=True)
    assert (asked_now.usable, asked_now.detail) == (ahead.usable, ahead.detail)
    assert len(fresh_probe) == 2


class _Refusing(BwrapBackend):
    """bwrap found, but no sandbox can be made (as where user namespaces are forbidden)."""

    async def create(self, spec: SandboxSpec) -> None:  # type: ignore[override] - it never makes one
        raise OSError(1, "Operation not permitted: user namespaces are off")


def test_a_failing_probe_started_ahead_says_why(fresh_probe: list[str]) -> None:
    backend = _Refusing()
    if backend.binary is None:
        pytest.skip("no bwrap here")
    backend.status_ahead()
    status = backend.status()
    assert not status.usable
    assert "user namespaces are off" in status.detail and "cannot sandbox here" in status.detail
    assert fresh_probe == ["assay-bwrap-probe"]


def test_without_bwrap_nothing_is_started(fresh_probe: list[str]) -> None:
    backend = BwrapBackend()
    backend.binary = None
    backend.status_ahead()
    status = backend.status()
    assert not status.usable and "no bwrap found" in status.detail
    assert fresh_probe == []


def test_a_process_ending_while_the_probe_runs_leaves_no_probe_folder(tmp_path: Path) -> None:
    if BwrapBackend().binary is None:
        pytest.skip("no bwrap here")
    code = ("import tempfile, threading\n"
            "from assay.sandbox.registry import status_ahead\n"
            "made, real = threading.Event(), tempfile.mkdtemp\n"
            "def mkdtemp(*a, **k):\n"
            "    folder = real(*a, **k)\n"
            "    made.set()\n"
            "    return folder\n"
            "tempfile.mkdtemp = mkdtemp\n"
            "status_ahead(None)\n"
            "assert made.wait(60)\n"  # the probe's folder is made: its sandbox is under way
            "raise SystemExit(3)\n")  # a usage error while the probe runs
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("assay-probe-")] == []
