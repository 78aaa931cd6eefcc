"""SWE-bench's own reader of its task-repository format (``swebench.task.repo``, the package's
5.x code, installed without its dependencies into a venv of its own by scripts/test.sh) reads the
shipped fixtures as assay's importer does: the same instance fields, the same FAIL_TO_PASS and
PASS_TO_PASS lists, the same problem statement and patches, byte for byte. And the task folders
assay writes from a classic instance JSONL are a task repository the owner's reader reads back as
the rows it came from. The owner's package is a check of how the format is read, never a
dependency of assay."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from assay.importers import import_suite
from assay.importers.swe_bench import from_jsonl
from assay.spec.load import load_suite
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "import" / "swe-bench"
PEER = ROOT / ".venv-peers" / "bin" / "python"
#: what the owner's reader yields and assay keeps (as the prompt, the predicate, the metadata, the solution)
FIELDS = ("instance_id", "repo", "version", "base_commit", "problem_statement", "patch", "test_patch",
          "eval_script", "hints_text", "FAIL_TO_PASS", "PASS_TO_PASS")
READ = """
import json, sys
from swebench.task.repo import load_task, task_dirs
from swebench import __version__
print(json.dumps({"version": __version__, "tasks": [load_task(d) for d in task_dirs(sys.argv[1])]}))
"""


def _peer_reads(repo: Path) -> dict:
    if not PEER.exists():
        if os.environ.get("ASSAY_REQUIRE_PEERS") == "1":
            pytest.fail(f"{PEER} is missing: scripts/test.sh installs SWE-bench's package there")
        pytest.skip("SWE-bench's package is not installed in .venv-peers (scripts/test.sh installs it)")
    out = subprocess.run([str(PEER), "-c", READ, str(repo)], capture_output=True, text=True, timeout=120,
                         env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONNOUSERSITE": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_the_owners_reader_and_assays_importer_read_the_task_repository_alike(tmp_path: Path) -> None:
    peer = _peer_reads(FIXTURE / "task-repo")
    assert peer["version"].startswith("5.") and len(peer["tasks"]) == 1
    import_suite("swe-bench", FIXTURE / "task-repo", tmp_path / "s")
    tasks = {t.id: t for t in load_suite(tmp_path / "s").tasks}
    for inst in peer["tasks"]:
        t = tasks[inst["instance_id"]]
        assert t.prompt.strip() == inst["problem_statement"].strip()
        [p] = t.spec.predicates
        assert (p.fail_to_pass, p.pass_to_pass) == (inst["FAIL_TO_PASS"], inst["PASS_TO_PASS"])
        meta = t.spec.extra["source"]["metadata"]
        assert {k: meta[k] for k in ("instance_id", "repo", "version", "base_commit")} == \
               {k: inst[k] for k in ("instance_id", "repo", "version", "base_commit")}


def test_a_classic_jsonl_becomes_a_task_repository_the_owner_reads_back_as_its_rows(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (FIXTURE / "instances.jsonl").read_text().splitlines() if line.strip()]
    [eval_sh] = (FIXTURE / "task-repo" / "tasks").glob("*/eval.sh")
    rows = [{**r, "eval_script": eval_sh.read_text(), "hints_text": "see the tokenizer"} for r in rows]  # 5.x rows
    crlf = {**rows[0], "instance_id": rows[0]["instance_id"] + "-crlf", "hints_text": "",
            "patch": rows[0]["patch"].replace("\n", "\r\n"),  # a patch's CRLF survives verbatim
            "FAIL_TO_PASS": json.dumps(rows[0]["FAIL_TO_PASS"]) if isinstance(rows[0]["FAIL_TO_PASS"], list)
            else rows[0]["FAIL_TO_PASS"]}  # HuggingFace's rows hold the lists as JSON strings
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in [*rows, crlf]))
    repo = tmp_path / "repo"
    from_jsonl(src, repo / "tasks")
    (repo / "sweb.yaml").write_text("dataset: converted\ndatasets: [converted]\nsplits: [test]\n")
    peer = {t["instance_id"]: t for t in _peer_reads(repo)["tasks"]}
    assert sorted(peer) == sorted(r["instance_id"] for r in [*rows, crlf])
    for row in [*rows, crlf]:
        got = peer[row["instance_id"]]
        for k in FIELDS:
            want = row.get(k)
            if k in ("FAIL_TO_PASS", "PASS_TO_PASS") and isinstance(want, str):
                want = json.loads(want)
            assert got.get(k) == want, (row["instance_id"], k)


def test_hints_in_their_own_file_reach_the_metadata_and_nothing_is_invented(tmp_path: Path) -> None:
    """The format keeps hints in ``hints.md``, not in ``task.yaml``; a classic row without an
    eval script gets no ``eval.sh`` (assay's predicate never runs one) and empty hints no file."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE / "task-repo", repo)
    [task] = (repo / "tasks").iterdir()
    (task / "hints.md").write_text("the tokenizer splits on the first '=' only\n")
    import_suite("swe-bench", repo, tmp_path / "s", repos=FIXTURE / "repos")
    [t] = load_suite(tmp_path / "s").tasks
    assert t.spec.extra["source"]["metadata"]["hints_text"] == "the tokenizer splits on the first '=' only\n"
    assert "hints" not in t.prompt
    rows = tmp_path / "rows.jsonl"
    rows.write_text((FIXTURE / "instances.jsonl").read_text())
    [d] = from_jsonl(rows, tmp_path / "conv")
    assert not (d / "eval.sh").exists() and not (d / "hints.md").exists()
    assert (d / "gold.patch").read_text() == json.loads(rows.read_text().splitlines()[0])["patch"]
