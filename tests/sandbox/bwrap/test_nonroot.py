"""Non-root mode: a normal user with user namespaces runs bubblewrap sandboxes, bounded and
cleaned up like root's. The harness runs as ``nobody`` through ``setpriv`` (util-linux)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

NOBODY = 65534
pytestmark = pytest.mark.usefixtures("bwrap_backend")

SCRIPT = """
import asyncio, json, sys
from pathlib import Path
from assay.sandbox.base import SandboxSpec
from assay.sandbox.bwrap.backend import BwrapBackend
from assay.spec.budget import Limits, NetworkProfile

async def main():
    ws = Path(sys.argv[1])
    backend = BwrapBackend()
    agent = await backend.create(SandboxSpec(workspace=ws, network=NetworkProfile.none, limits=Limits(disk_mb=16)))
    who = await agent.exec(["/bin/sh", "-c", "id -u; echo answer > /workspace/out; "
                            "(setsid sh -c 'touch /tmp/ready; exec sleep 311' &); "
                            "while [ ! -e /tmp/ready ]; do :; done; echo ok"],
                           timeout_s=30)
    report = await agent.destroy()
    filler = await backend.create(SandboxSpec(workspace=ws, network=NetworkProfile.none, limits=Limits(disk_mb=16)))
    fill = await filler.exec(["/bin/sh", "-c", "head -c 100000000 /dev/zero > /tmp/f; sleep 60"], timeout_s=60)
    await filler.destroy()
    verifier = await backend.create(SandboxSpec(workspace=ws, network=NetworkProfile.none, identity="verifier"))
    check = await verifier.exec(["/bin/sh", "-c", "id -u; cat /workspace/out"], timeout_s=30)
    await verifier.destroy()
    print(json.dumps({"who": who.stdout.decode(), "left": list(report.leftover_commands), "cpu_s": report.cpu_s,
                      "fill": fill.resource_limit, "check": check.stdout.decode(), "facts": backend.facts(),
                      "describe": agent.describe()}))

asyncio.run(main())
"""


def _as_nobody(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
                           "env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv],
                          capture_output=True, text=True, timeout=180, cwd=cwd)


def _interpreter(cwd: Path, env: dict[str, str]) -> str | None:
    """An interpreter of this Python's version that ``nobody`` may run (the venv's may sit in /root)."""
    v = sys.version_info
    for exe in (sys.executable, f"/usr/bin/python{v.major}.{v.minor}", f"/usr/local/bin/python{v.major}.{v.minor}"):
        if Path(exe).exists() and _as_nobody([exe, "-c", "import pydantic, assay"], cwd, env).returncode == 0:
            return exe
    return None


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory the unprivileged user can reach (pytest's own tmp is private to root)."""
    d = Path(tempfile.mkdtemp(prefix="assay-nonroot-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("launcher", ["", "sh"])
def test_a_normal_user_runs_bounded_sandboxes(open_dir: Path, launcher: str) -> None:
    """With the compiled launcher (built into the user's own cache) and with the shell path."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to become an unprivileged user")
    tmp_path = open_dir
    home, ws = tmp_path / "home", tmp_path / "ws"
    for d in (home, ws):
        d.mkdir()
        os.chown(d, NOBODY, NOBODY)
    paths = dict.fromkeys([str(ROOT / "src"), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": os.pathsep.join(paths),
           "ASSAY_SANDBOX_LAUNCHER": launcher}
    exe = _interpreter(home, env)
    if exe is None:
        pytest.skip("no interpreter with this install's packages is readable by an unprivileged user here")
    (home / "run.py").write_text(textwrap.dedent(SCRIPT))
    out = _as_nobody([exe, str(home / "run.py"), str(ws)], home, env)
    assert out.returncode == 0, out.stderr[-3000:]
    rep = json.loads(out.stdout.strip().splitlines()[-1])
    assert rep["facts"]["identity_mode"] == "user-namespace" and rep["describe"]["host_uid"] is None
    from assay.sandbox.bwrap import native

    if launcher == "sh":
        assert rep["facts"]["launcher"] == native.FORCED_SHELL
    elif shutil.which("cc") or shutil.which("gcc"):
        assert rep["facts"]["launcher"] == native.COMPILED
        assert list((home / ".cache" / "assay" / "launch").glob("assay-launch-*"))  # the user's own build
    assert rep["who"].split() == ["1000", "ok"], rep
    assert any("sleep 311" in c for c in rep["left"]) and rep["cpu_s"] is not None, rep
    assert rep["fill"] == "disk", rep
    assert rep["check"].split() == ["1001", "answer"], rep
    assert (ws / "out").stat().st_uid == NOBODY  # the sandbox wrote as the user, no other host uid
