"""What a manifest says of the repository holding the harness and the suite: a commit is recorded
only for files that commit can speak for. A folder the enclosing repository ignores (assay installed
into a project's ``.venv``, a suite generated under ``build/``) is in no commit of it: recording
that repository's HEAD, with no uncommitted file, would name a commit that holds none of it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.run.manifest_builder import harness_facts, repo_facts

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.org", "-c", "user.name=t", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def project(tmp_path: Path) -> Path:
    """A user's project: a repository with one commit that ignores its ``.venv`` and ``build``."""
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text(".venv/\nbuild/\n")
    (root / "app.py").write_text("print('app')\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "project")
    return root


def test_a_folder_the_repository_ignores_gets_no_commit_of_it(tmp_path: Path) -> None:
    root = project(tmp_path)
    installed = root / ".venv" / "lib" / "python3.11" / "site-packages" / "assay"
    installed.mkdir(parents=True)
    (installed / "__init__.py").write_text("")
    facts = repo_facts(installed)
    assert facts["git"] is None and facts.get("commit") is None
    assert facts["ignored_in"] == str(root)  # said why: the repository there ignores it

    suite = root / "build" / "suite"
    suite.mkdir(parents=True)
    (suite / "suite.yaml").write_text("name: s\n")
    assert repo_facts(suite)["git"] is None


def test_a_tracked_folder_gets_its_commit_and_its_uncommitted_files(tmp_path: Path) -> None:
    root = project(tmp_path)
    suite = root / "suite"
    suite.mkdir()
    (suite / "suite.yaml").write_text("name: s\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "suite")
    head = git(root, "rev-parse", "HEAD")
    assert repo_facts(suite) == {"git": str(root), "commit": head, "dirty": {}}

    (suite / "suite.yaml").write_text("name: changed\n")
    (suite / "new.txt").write_text("new\n")  # untracked, not ignored: recorded by its digest
    facts = repo_facts(suite)
    assert facts["commit"] == head and sorted(facts["dirty"]) == ["suite/new.txt", "suite/suite.yaml"]


def test_a_repository_with_no_commit_yet_and_no_repository(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    (empty / "a.txt").write_text("a\n")
    facts = repo_facts(empty)
    assert facts["git"] == str(empty) and facts["commit"] is None and list(facts["dirty"]) == ["a.txt"]

    alone = tmp_path / "alone"
    alone.mkdir()
    assert repo_facts(alone) == {"git": None}


def test_the_harness_commit_is_the_one_of_its_own_sources() -> None:
    facts = harness_facts()
    src = Path(__file__).resolve().parents[2] / "src" / "assay"
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", "__init__.py"], cwd=src,
                             capture_output=True).returncode == 0
    if not tracked:
        pytest.skip("assay's sources are not in a git checkout here")
    assert facts["commit"] == git(src, "rev-parse", "HEAD")
    # each file that differs from the commit by its digest, not only their number
    assert facts["dirty"] == repo_facts(src)["dirty"] and facts["dirty_files"] == len(facts["dirty"])


INSTALLED = "import json; from assay.run.manifest_builder import harness_facts; print(json.dumps(harness_facts()))"


def test_an_assay_installed_from_a_wheel_names_its_build(tmp_path: Path) -> None:
    """No repository holds an installed wheel: the manifest names the install's RECORD (every file
    with its SHA-256, as pip wrote it) by the digest of its bytes."""
    tree, target = tmp_path / "tree", tmp_path / "site"
    root = Path(__file__).resolve().parents[2]
    tree.mkdir()  # built from a copy: a build in place would write build/ and egg-info into the checkout
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(root / name, tree / name)
    shutil.copytree(root / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target",
                           str(target), str(tree)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    (record,) = target.glob("assay-*.dist-info/RECORD")
    env = {**os.environ, "PYTHONPATH": str(target)}

    def facts() -> dict:
        out = subprocess.run([sys.executable, "-c", INSTALLED], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    got = facts()
    assert got["commit"] is None
    assert got["installed_record_sha256"] == hashlib.sha256(record.read_bytes()).hexdigest()

    # a copy of the sources ahead of the install on the path is not what pip installed: the
    # distribution found is the install's, its RECORD is not claimed for the copy
    copy = tmp_path / "copy"
    shutil.copytree(target / "assay", copy / "assay", ignore=shutil.ignore_patterns("__pycache__"))
    env["PYTHONPATH"] = os.pathsep.join([str(copy), str(target)])
    got = facts()
    assert got["commit"] is None and "installed_record_sha256" not in got


def test_sources_that_are_not_the_installed_ones_name_no_install(tmp_path: Path) -> None:
    """A copy of the sources ahead on the path is not the distribution pip installed: no RECORD is
    claimed for it (the distribution found is another copy's)."""
    copy = tmp_path / "copy"
    shutil.copytree(Path(__file__).resolve().parents[2] / "src" / "assay", copy / "assay",
                    ignore=shutil.ignore_patterns("__pycache__"))
    out = subprocess.run([sys.executable, "-c", INSTALLED], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(copy)})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["commit"] is None and "installed_record_sha256" not in got
