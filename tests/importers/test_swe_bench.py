"""Importing SWE-bench tasks (tests/fixtures/import/swe-bench, see ATTRIBUTION.md): a 5.x task
repository and the classic instance JSONL give the same task; the repository comes from a
local folder (a tree named by its commit, or a git clone); what cannot map (a prebuilt image, a
non-pytest harness, a missing repository, a patch that does not apply, nothing to grade) is
refused per task with its reason while the rest goes on; then audit, and run oracle,nop."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from assay.cli.main import main
from assay.errors import UsageError
from assay.importers import import_suite
from assay.spec.load import load_suite

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "swe-bench"
TID = "pytest-dev__iniconfig-c689ba7"
BASE = "bc4bb827cda51be18cb05654cbd70bbd6f2b7eff"


def _row() -> dict:
    return json.loads((FIXTURE / "instances.jsonl").read_text().splitlines()[0])


def test_task_repository_fields_map_to_assays_own(tmp_path: Path) -> None:
    out = tmp_path / "s"
    rep = import_suite("swe-bench", FIXTURE / "task-repo", out)
    t = {x.id: x for x in load_suite(out).tasks}[TID]
    assert t.prompt.strip() == (FIXTURE / f"task-repo/tasks/{TID}/problem_statement.md").read_text().strip()
    [p] = t.spec.predicates
    tests = json.loads((FIXTURE / f"task-repo/tasks/{TID}/tests.json").read_text())
    assert p.kind == "test_lists" and p.fail_to_pass == tests["FAIL_TO_PASS"] and p.pass_to_pass == tests["PASS_TO_PASS"]
    assert p.inifile == "pyproject.toml" and p.pythonpath == ["src"] and p.deleted == []
    hidden = t.dir / "hidden" / "repo_tests"
    assert sorted(x.relative_to(hidden).as_posix() for x in hidden.rglob("*") if x.is_file()) == [
        "pyproject.toml", "testing/conftest.py", "testing/test_iniconfig.py"]
    assert '"assignment in value"' in (hidden / "testing/test_iniconfig.py").read_text()  # the test patch applied
    assert '"assignment in value"' not in (t.dir / "workspace/testing/test_iniconfig.py").read_text()  # not for the agent
    assert (t.dir / "workspace/src/iniconfig/_parse.py").read_text().count('split("=", 2)') == 1  # base_commit
    assert 'split("=", 1)' in (t.dir / "solution/files/src/iniconfig/_parse.py").read_text()
    meta = t.spec.extra["source"]["metadata"]
    assert meta["base_commit"] == BASE and meta["version"] == "2.1" and meta["log_parser"] == "parse_log_pytest"
    assert t.spec.category == "pytest-dev-iniconfig"
    assert any(d.startswith("SWE-bench's image installs the repository") for d in t.spec.deviations)
    assert rep.tasks[0].imported and not rep.left_out


def test_classic_jsonl_gives_the_same_task(tmp_path: Path) -> None:
    import_suite("swe-bench", FIXTURE / "task-repo", tmp_path / "a")
    import_suite("swe-bench", FIXTURE / "instances.jsonl", tmp_path / "b")
    a, b = (yaml.safe_load((tmp_path / s / "tasks" / TID / "task.yaml").read_text()) for s in "ab")
    assert a["predicates"] == b["predicates"]
    assert b["extra"]["source"]["path"].endswith(f"instances.jsonl#{TID}")


def test_the_repository_from_a_git_clone(tmp_path: Path) -> None:
    clone = tmp_path / "repos" / "pytest-dev__iniconfig"
    shutil.copytree(FIXTURE / "repos" / f"pytest-dev__iniconfig@{BASE}", clone)
    git = ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (tmp_path / "rows.jsonl").write_text(json.dumps({**_row(), "base_commit": sha}) + "\n")
    rep = import_suite("swe-bench", tmp_path / "rows.jsonl", tmp_path / "s", repos=tmp_path / "repos")
    assert rep.tasks[0].imported, rep.tasks[0].refused
    ws = tmp_path / "s" / "tasks" / TID / "workspace"
    assert (ws / "src/iniconfig/_parse.py").is_file() and not (ws / ".git").exists()


def _rows(tmp_path: Path) -> Path:
    good = _row()
    bad = [
        {**good, "instance_id": "django__django-1", "FAIL_TO_PASS": json.dumps(["test_x (admin.tests.T)"])},
        {**good, "instance_id": "parser-1", "log_parser": "parse_log_sympy"},
        {**good, "instance_id": "image-1", "image": "swebench/sweb.eval.x86_64.x:latest"},
        {**good, "instance_id": "norepo-1", "repo": "someone/absent"},
        {**good, "instance_id": "nopatch-1", "test_patch": "diff --git a/nope.py b/nope.py\n--- a/nope.py\n"
                                                           "+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n"},
        {**good, "instance_id": "empty-1", "FAIL_TO_PASS": "[]"},
        {**good, "instance_id": "noprompt-1", "problem_statement": "  "},
    ]
    lines = [json.dumps(r) for r in [good, *bad]] + ["{not json"]
    (tmp_path / "rows.jsonl").write_text("\n".join(lines) + "\n")
    shutil.copytree(FIXTURE / "repos", tmp_path / "repos")
    return tmp_path / "rows.jsonl"


def test_what_cannot_map_is_refused_per_task_with_its_reason(tmp_path: Path, capsys) -> None:
    rows = _rows(tmp_path)
    assert main(["import", "swe-bench", str(rows), "-o", str(tmp_path / "s")]) == 1
    rep = json.loads((tmp_path / "s" / "import-report.json").read_text())
    why = {t["id"]: " ".join(t["refused"]) for t in rep["tasks"]}
    assert why[TID.lower()] == ""
    assert "not a pytest node id" in why["django__django-1"]
    assert "non-pytest harness" in why["parser-1"]
    assert "prebuilt image" in why["image-1"]
    assert "someone/absent" in why["norepo-1"] and "does not fetch" not in why["norepo-1"]
    assert "test.patch does not apply" in why["nopatch-1"]
    assert "nothing grades this task" in why["empty-1"]
    assert "no prompt" in why["noprompt-1"]
    assert "not JSON" in why["line-9"]
    assert [t.id for t in load_suite(tmp_path / "s").tasks] == [TID]
    assert "NOT imported django__django-1" in capsys.readouterr().out


def test_a_prebuilt_dockerfile_is_refused_and_no_repos_folder_is_named(tmp_path: Path) -> None:
    src = tmp_path / "tr"
    shutil.copytree(FIXTURE / "task-repo", src)
    shutil.copytree(src / "tasks" / TID, src / "tasks" / "with-image")
    (src / "tasks/with-image/Dockerfile").write_text("FROM swebench/sweb.env.py.x86_64.abc:latest\n")
    rep = import_suite("swe-bench", src, tmp_path / "s", repos=FIXTURE / "repos")
    why = {t.id: " ".join(t.refused) for t in rep.tasks}
    assert "prebuilt environment image" in why["with-image"] and why[TID] == ""
    with pytest.raises(UsageError, match="no task could be imported"):
        import_suite("swe-bench", src, tmp_path / "s2", repos=tmp_path / "empty")
    assert not (tmp_path / "s2").exists()


def test_usage_errors(tmp_path: Path) -> None:
    assert main(["import", "swe-bench", str(tmp_path), "-o", str(tmp_path / "x")]) == 2  # no task under it
    assert main(["import", "harbor", str(FIXTURE), "--repos", str(tmp_path), "-o", str(tmp_path / "y")]) == 2
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_import_audit_then_run_oracle_and_nop(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    assert main(["import", "swe-bench", str(FIXTURE / "task-repo"), "-o", str(suite)]) == 0
    # SWE-bench grades by tests alone: a change to a file no test reads survives, and the audit says so
    assert main(["audit", str(suite), "-o", str(tmp_path / "audit")]) == 1
    doc = json.loads((tmp_path / "audit" / "audit.json").read_text())
    [t] = doc["tasks"]
    assert (t["task_id"], t["label"], t["oracle"], t["nop"]) == (TID, "weak", "pass", "fail"), t
    assert any("extra side effect" in e for e in t["evidence"])
    assert f'id="task-{TID}"' in (tmp_path / "audit" / "audit.html").read_text()
    out = tmp_path / "run"
    assert main(["run", str(suite), "-a", "oracle,nop", "-q", "-o", str(out)]) in (0, 1)
    rows = [json.loads(p.read_text()) for p in out.glob("trials/*/attempts/*/result.json")]
    assert {r["agent"]: r["end_state"] for r in rows} == {"oracle": "pass", "nop": "fail"}, rows
    manifest = json.loads((out / "manifest.json").read_text())
    [rec] = manifest["tasks"]
    assert any(d.startswith("SWE-bench's image installs") for d in rec["deviations"])
