"""The compiled exec launcher (``assay-launch``) and its fallback: where it is built, that a
cache file someone else could have written is never run, that a bad request runs nothing, and
that a bwrap sandbox keeps the same promises with either launcher (the doctor says which)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assay.sandbox.bwrap import native
from assay.sandbox.bwrap.launch import request
from tests.conftest import ROOT

pytestmark = pytest.mark.usefixtures("bwrap_backend")

SANDBOX = """
import asyncio, json, sys
from pathlib import Path
from assay.sandbox.base import SandboxSpec
from assay.sandbox.bwrap.backend import BwrapBackend
from assay.sandbox.bwrap import native
from assay.spec.budget import NetworkProfile

async def main():
    backend = BwrapBackend()
    sb = await backend.create(SandboxSpec(workspace=Path(sys.argv[1]), network=NetworkProfile.none))
    who = await sb.exec(["/bin/sh", "-c", "id -u; id -g; pwd; cat /proc/1/cmdline | tr '\\\\0' ' '; echo; "
                         "cat /proc/2/cmdline | tr '\\\\0' ' '; echo; "
                         "cat; echo \\"$ASSAY_X\\""], env={"ASSAY_X": "it's $x"}, stdin=b"from stdin\\n", timeout_s=30)
    code = await sb.exec(["sh", "-c", "exit 7"], cwd="/tmp", timeout_s=30)
    killed = await sb.exec(["/bin/sh", "-c", "kill -9 $$"], timeout_s=30)
    missing = await sb.exec(["no-such-command-here"], timeout_s=30)
    left = await sb.exec(["/bin/sh", "-c", "(setsid sh -c 'touch /tmp/ready; exec sleep 313' &); "
                          "while [ ! -e /tmp/ready ]; do :; done"], timeout_s=30)
    rep = await sb.destroy()
    print(json.dumps({"who": who.stdout.decode(), "err": who.stderr.decode(), "code": code.exit_code,
                      "killed": [killed.exit_code, killed.signal], "missing": missing.exit_code,
                      "left": list(rep.leftover_commands), "facts": backend.facts()["launcher"],
                      "describe": sb.describe()["launcher"], "kind": native.kind()}))

asyncio.run(main())
"""


def _python(code: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **env})


@pytest.mark.parametrize("forced", ["", "sh"])
def test_a_sandbox_keeps_its_promises_with_either_launcher(tmp_path: Path, forced: str) -> None:
    if not forced and native.launcher() is None:
        pytest.skip("no C compiler here: the compiled launcher is not built")
    out = _python(SANDBOX, str(tmp_path), env={"ASSAY_SANDBOX_LAUNCHER": forced})
    assert out.returncode == 0, out.stderr[-3000:]
    rep = json.loads(out.stdout.strip().splitlines()[-1])
    lines = rep["who"].splitlines()
    assert lines[:3] == ["1000", "1000", "/workspace"], rep
    # what holds the namespaces: the compiled launcher bound in, as pid 1 itself; or cat under
    # bwrap's init (the exec's own shell is then pid 2, or 3)
    if forced:
        assert lines[3].split()[0].endswith("bwrap") and lines[4].split() == ["cat"], rep
    else:
        assert lines[3].split() == ["/.assay-hold", "hold"] and lines[4].startswith("/bin/sh -c id -u"), rep
    assert lines[5:] == ["from stdin", "it's $x"], rep
    assert rep["code"] == 7 and rep["killed"][1] == 9, rep
    assert rep["missing"] == 127, rep
    assert any("sleep 313" in c for c in rep["left"]), rep
    want = native.FORCED_SHELL if forced else native.COMPILED
    assert rep["facts"] == rep["describe"] == rep["kind"] == want


def test_without_a_compiler_the_shell_path_is_used(tmp_path: Path) -> None:
    out = _python("from assay.sandbox.bwrap import native; print(native.launcher(), native.kind(), sep='|')",
                  env={"PATH": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "ASSAY_SANDBOX_LAUNCHER": ""})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"None|{native.SHELL}"
    assert not list((tmp_path / "cache").rglob("assay-launch-*"))


def _expected(cache: Path) -> Path:
    import hashlib

    return cache / "assay" / "launch" / f"assay-launch-{hashlib.sha256(native.SOURCE.read_bytes()).hexdigest()[:16]}"


@pytest.mark.parametrize("open_to", ["file", "directory"])
def test_a_cached_launcher_others_could_write_is_never_run(tmp_path: Path, open_to: str) -> None:
    if native.launcher() is None:
        pytest.skip("no C compiler here: the compiled launcher is not built")
    planted = _expected(tmp_path / "cache")
    planted.parent.mkdir(parents=True)
    marker = tmp_path / "ran"
    planted.write_text(f"#!/bin/sh\ntouch {marker}\nexit 0\n")
    planted.chmod(0o777 if open_to == "file" else 0o755)
    if open_to == "directory":
        planted.parent.chmod(0o777)
    out = _python("from assay.sandbox.bwrap import native; print(native.launcher())",
                  env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stderr
    assert not marker.exists()
    if open_to == "file":  # rebuilt in its place, now ours alone
        assert out.stdout.strip() == str(planted)
        assert planted.read_bytes()[:4] == b"\x7fELF" and not planted.stat().st_mode & 0o022
    else:  # a directory others can write to is not used at all
        assert out.stdout.strip() == "None"


def _launch(data: bytes) -> subprocess.CompletedProcess[bytes]:
    path = native.launcher()
    if path is None:
        pytest.skip("no C compiler here: the compiled launcher is not built")
    r, w = os.pipe()
    proc = subprocess.Popen([str(path), str(r)], pass_fds=(r,), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(r)
    os.write(w, data)
    os.close(w)
    out, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_a_bad_request_runs_nothing(tmp_path: Path) -> None:
    good = request(["/usr/bin/touch", str(tmp_path / "made")], {}, stdin_null=True, entry=None)
    for bad in (good[: len(good) // 2], good[:-1], good.replace(b"assay-launch-2", b"assay-launch-9"),
                good.replace(b"\x00exec\x00", b"\x00nope\x00"), b"x" * 100):
        res = _launch(bad)
        assert res.returncode == 127 and res.stderr.startswith(b"assay-launch: "), res
        assert not (tmp_path / "made").exists()
    assert _launch(good).returncode == 0 and (tmp_path / "made").exists()  # control: the good one runs


def test_a_request_with_a_nul_byte_is_refused() -> None:
    with pytest.raises(ValueError):
        request(["/bin/echo", "a\0b"], {}, stdin_null=True, entry=None)
    with pytest.raises(ValueError):
        request(["/bin/true"], {"A": "x\0y"}, stdin_null=True, entry=None)
