"""Conformance with the peer's own verdict: for every shipped imported fixture, assay's oracle and
do-nothing verdicts equal what the task's own test command says when run by hand, with plain
bubblewrap, over the same built image (the solution run first, or not at all).

By hand means the peer's way, not assay's: the image's rootfs as the root, the workspace at the
image's WORKDIR, the tests at /tests; Harbor: ``bash /tests/test.sh`` and its
/logs/verifier/reward.txt or reward.json (the script as imported: its stock uv bootstrap, which
needs the network neither side has, replaced by the image's pytest); Terminal-Bench 1: pytest over
the tests run-tests.sh names, by its exit code (run-tests.sh's uv bootstrap needs the network,
which neither side has); a custom run-tests.sh:
``bash /tests/run-tests.sh`` with $TEST_DIR=/tests, its output read as Terminal-Bench's pytest parser
reads it (the results after 'short test summary info', every one PASSED, SKIPPED or XFAIL)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from assay.environments.runtime import ensure_suite
from assay.environments.store import ImageStore
from assay.importers import import_suite
from assay.records.results import EndState
from assay.run.validate import validate_suite
from assay.sandbox.bwrap.locate import find_bwrap
from assay.spec.load import LoadedTask, load_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def by_hand(task: LoadedTask, rootfs: Path, workdir: str, scratch: Path, *, solve: bool, fmt: str) -> bool:
    """The peer's verdict on the task, run by hand over the image."""
    bwrap = find_bwrap()
    assert bwrap is not None
    ws, logs = scratch / "ws", scratch / "logs"
    ws.mkdir(parents=True)
    logs.mkdir()
    args = [str(bwrap.path), "--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--tmpfs", "/"]
    for entry in sorted(rootfs.iterdir()):
        if entry.name in ("proc", "dev", "tmp"):
            continue
        args += (["--symlink", str(entry.readlink()), f"/{entry.name}"] if entry.is_symlink()
                 else ["--ro-bind", str(entry), f"/{entry.name}"])
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", str(ws), workdir,
             "--ro-bind", str(task.dir / "hidden" / "tests"), "/tests", "--bind", str(logs), "/logs/verifier",
             "--ro-bind", str(task.dir / "solution"), "/solution", "--chdir", workdir, "--clearenv",
             "--setenv", "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "--setenv", "TEST_DIR", "/tests", "--setenv", "HOME", "/root"]
    script = "bash /solution/solve.sh; " if solve else ""
    if fmt == "harbor":
        script += "bash /tests/test.sh"
    elif fmt == "terminal-bench-custom":
        script += "bash /tests/run-tests.sh"
    else:
        tests = " ".join(f"/{p.tests}" for p in task.spec.predicates)
        script += f"python3 -m pytest -q -p no:cacheprovider {tests}"
    res = subprocess.run([*args, "/bin/bash", "-c", script], capture_output=True, timeout=300)
    if fmt == "harbor":
        reward, rewards = logs / "reward.txt", logs / "reward.json"
        if rewards.is_file():  # Harbor's multi-reward form: every value must reach the threshold
            values = json.loads(rewards.read_text()).values()
            return bool(values) and all(float(v) >= 1.0 for v in values)
        return reward.is_file() and float(reward.read_text().strip() or 0) >= 1.0
    if fmt == "terminal-bench-custom":
        parts = re.split(r"=+\s*short test summary info\s*=+", res.stdout.decode(), maxsplit=1, flags=re.I)
        found = re.findall(r"^(PASSED|FAILED|ERROR|XPASS|XFAIL|SKIPPED):?\s+\S", parts[-1], re.M)
        return len(parts) == 2 and bool(found) and all(s in ("PASSED", "XFAIL", "SKIPPED") for s in found)
    return res.returncode == 0


#: a custom run-tests.sh (not the stock uv runner): Terminal-Bench runs it as shipped
CUSTOM_RUN_TESTS = "#!/bin/bash\ncd /app\npython3 -m pytest -p no:cacheprovider $TEST_DIR/test_outputs.py -rA\n"


def _source(fmt: str, tmp_path: Path) -> Path:
    if fmt != "terminal-bench-custom":
        return FIXTURES / fmt
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "terminal-bench", src)
    for script in src.glob("*/run-tests.sh"):
        script.write_text(CUSTOM_RUN_TESTS)
    return src


@pytest.mark.parametrize("fmt", ["terminal-bench", "terminal-bench-custom", "harbor"])
def test_assays_verdicts_equal_the_peers_own(tmp_path: Path, image_store: ImageStore, fmt: str) -> None:
    out = tmp_path / "suite"
    import_suite(fmt.removesuffix("-custom"), _source(fmt, tmp_path), out)
    suite = load_suite(out)
    images = ensure_suite(suite, store=image_store)
    report = validate_suite(out, keep=tmp_path / "run")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    for rec in manifest["tasks"]:  # the run records where the workspace was and what the import flagged
        assert rec["workdir"] == images[rec["id"]].workdir == "/app"
        assert any(d.startswith("FROM ") for d in rec["deviations"]), rec["deviations"]
    checked = 0
    for v in report.verdicts:
        task = {t.id: t for t in suite.tasks}[v.task_id]
        info = images[task.id]
        rootfs = image_store.rootfs(info.digest)
        peer_oracle = by_hand(task, rootfs, info.workdir or "/workspace", tmp_path / task.id / "oracle",
                              solve=True, fmt=fmt)
        peer_nop = by_hand(task, rootfs, info.workdir or "/workspace", tmp_path / task.id / "nop",
                           solve=False, fmt=fmt)
        assert v.oracle is not None and v.nop is not None
        assert (v.oracle.end_state is EndState.passed) == peer_oracle, (task.id, v.oracle.predicates)
        assert (v.nop.end_state is EndState.passed) == peer_nop, task.id
        assert peer_oracle and not peer_nop, task.id  # each fixture solvable, and not by doing nothing
        checked += 1
    assert checked == len(suite.tasks) >= 2
