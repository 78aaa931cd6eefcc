"""A full disk stops a run with one clear line; what was written stays valid and the run resumes.

The disk is a small tmpfs mounted in a private mount namespace (``unshare``), so nothing on the
machine fills up."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import STARTER_RUN_CPU_S, assay_env, cli_timeout, write_agent, write_suite, write_task


def _can_mount() -> str | None:
    if shutil.which("unshare") is None:
        return "no unshare"
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                            "mount -t tmpfs -o size=64k tmpfs /mnt 2>&1 || mount -t tmpfs -o size=64k tmpfs /tmp"],
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else f"cannot mount a tmpfs in a user namespace: {probe.stdout}{probe.stderr}"


def test_full_disk_stops_cleanly_and_resumes(tmp_path: Path) -> None:
    why = _can_mount()
    if why:
        pytest.skip(why)
    s = write_suite(tmp_path / "suite")
    write_task(s, "f", task={"category": "code", "predicates": [
        {"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]})
    agent = write_agent(tmp_path / "loud.yaml", "loud", """
        import os, sys
        sys.stdout.write(os.urandom(60_000).hex())  # 120 kB of output, stored as an artifact
        open('out.txt', 'w').write('done')
    """)
    mnt = tmp_path / "disk"
    mnt.mkdir()
    logs = tmp_path / "logs"
    logs.mkdir()
    py = sys.executable
    script = textwrap.dedent(f"""
        set -u
        mount -t tmpfs -o size=4m tmpfs {mnt}
        head -c 3500000 /dev/zero > {mnt}/filler
        {py} -m assay.cli.main run {s} --agent {agent} --sandbox host -n 20 --out {mnt}/run -q \\
            > {logs}/run.out 2> {logs}/run.err
        echo $? > {logs}/run.rc
        {py} -m assay.cli.main verify {mnt}/run > {logs}/verify1.out 2>&1
        echo $? > {logs}/verify1.rc
        cp {mnt}/run/ledger.jsonl {logs}/ledger-before
        ls {mnt}/run/trials/*/attempts/*/result.json | sort > {logs}/results-before
        rm {mnt}/filler
        {py} -m assay.cli.main run --resume {mnt}/run -q > {logs}/resume.out 2> {logs}/resume.err
        echo $? > {logs}/resume.rc
        {py} -m assay.cli.main verify {mnt}/run > {logs}/verify2.out 2>&1
        echo $? > {logs}/verify2.rc
        ls {mnt}/run/trials/*/attempts/*/result.json | sort > {logs}/results-after
        cat {mnt}/run/trials/*/attempts/*/result.json > {logs}/all-results
    """)
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script], env=assay_env(),
                          capture_output=True, text=True,
                          timeout=cli_timeout(2 * STARTER_RUN_CPU_S))  # 20 trials, two verifies, a resume
    assert proc.returncode == 0, proc.stderr

    def read(name: str) -> str:
        return (logs / name).read_text()

    err = read("run.err")
    assert read("run.rc").strip() == "2", err
    assert "Traceback" not in err and "disk full" in " ".join(err.split()), err
    assert "--resume" in " ".join(err.split())
    assert read("verify1.rc").strip() == "0", read("verify1.out")  # what was written is intact
    before = read("results-before").split()
    assert 0 < len(before) < 20
    assert read("resume.rc").strip() == "0", read("resume.err")
    assert read("verify2.rc").strip() == "0", read("verify2.out")
    after = read("results-after").split()
    assert set(before) <= set(after)
    trials = {Path(p).parts[-4] for p in after}
    assert len(trials) == 20  # every planned trial has a result after the resume
    everything = read("all-results")
    assert "harness_crash" not in everything  # the full disk stopped the run; it is no trial's outcome
    assert everything.count('"end_state": "pass"') == 20
    json.loads(read("ledger-before").splitlines()[0])
