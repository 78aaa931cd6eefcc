"""SWE-bench tasks: a SWE-bench 5.x task repository (``sweb.yaml``, ``tasks/<instance_id>/`` with
``task.yaml``, ``tests.json``, ``problem_statement.md``, ``gold.patch``, ``test.patch``,
``eval.sh``, ``Dockerfile``), or the classic instance JSONL (one row per instance: instance_id,
repo, base_commit, patch, test_patch, problem_statement, FAIL_TO_PASS, PASS_TO_PASS, ...), which
is first written out in the task-repository layout. The repository comes from a local folder
(``--repos``). docs/import.md has the field table."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from assay.importers.common import dockerfile_environment, metadata, task_id, write_task
from assay.importers.report import TaskReport
from assay.importers.swe_repo import RepoError, apply, conftests, copy_files, find_snapshot, inifile
from assay.untrusted.yaml_doc import load_yaml

#: a pytest node id: a .py file, then ``::`` parts (parameters may hold spaces)
PYTEST_ID = re.compile(r"^[^\s:]+\.py(::.+)?$")
#: SWE-bench's default per-instance test timeout (seconds), kept as the predicate's
TIMEOUT_S = 1800.0
META_KEYS = ("instance_id", "repo", "version", "base_commit", "environment_setup_commit", "created_at",
             "difficulty", "split", "datasets", "hints_text", "log_parser", "eval_type", "image")
#: classic JSONL columns kept as their own file, as the task-repository format does (SWE-bench's own
#: ``swebench.task.repo`` reads them there; tests/importers/test_swe_peer.py holds the two alike)
AS_FILE = {"patch": "gold.patch", "test_patch": "test.patch", "problem_statement": "problem_statement.md",
           "eval_script": "eval.sh"}
#: written only when non-empty, as the format does: an empty file never stands in for missing prose
OPTIONAL_FILE = {"hints_text": "hints.md"}


def find_tasks(src: Path) -> list[Path]:
    """The task folders of a task repository (``tasks/*/task.yaml``), or ``src`` itself."""
    if (src / "task.yaml").is_file() and (src / "tests.json").is_file():
        return [src]
    root = src / "tasks" if (src / "tasks").is_dir() else src
    return sorted(p.parent for p in root.glob("*/task.yaml") if p.is_file())


def from_jsonl(path: Path, into: Path) -> list[Path]:
    """Classic SWE-bench rows written as task-repository folders under ``into``; a row that is not
    a JSON object with an instance_id becomes a folder holding only its error (refused later)."""
    text = path.read_text()
    rows: list[Any]
    if text.lstrip().startswith("["):
        rows = json.loads(text)
    else:
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as e:
                    rows.append({"__error__": f"{path.name}:{n}: not JSON ({e})", "instance_id": f"line-{n}"})
    out = []
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict) or not row.get("instance_id"):
            row = {"__error__": f"{path.name}: row {n} is not an object with an instance_id", "instance_id": f"row-{n}"}
        d = into / str(row["instance_id"]).replace("/", "_")
        d.mkdir(parents=True)
        tests = {k: _id_list(row.get(k)) for k in ("FAIL_TO_PASS", "PASS_TO_PASS")}
        files = {**AS_FILE, **OPTIONAL_FILE}
        meta = {k: v for k, v in row.items() if k not in (*files, "FAIL_TO_PASS", "PASS_TO_PASS")}
        meta["__source__"] = f"{path}#{row['instance_id']}"
        (d / "task.yaml").write_text(yaml.safe_dump(meta, sort_keys=False, allow_unicode=True))
        (d / "tests.json").write_text(json.dumps(tests))
        for col, name in files.items():
            if isinstance(row.get(col), str) and (col in AS_FILE or row[col]):
                with open(d / name, "w", newline="") as f:
                    f.write(row[col])
        out.append(d)
    return out


def _id_list(v: Any) -> Any:
    """FAIL_TO_PASS / PASS_TO_PASS: a list, or (SWE-bench on HuggingFace) a JSON string of one."""
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v if v is not None else []


def write_task_folder(src: Path, dst: Path, rep: TaskReport, repos: Path | None) -> str | None:
    """One SWE-bench task as an assay task in ``dst``; returns its category (None: refused)."""
    try:
        meta = load_yaml((src / "task.yaml").read_text())
        tests = json.loads((src / "tests.json").read_text())
    except (yaml.YAMLError, ValueError, FileNotFoundError) as e:
        rep.refuse(f"task.yaml / tests.json unreadable: {e}")
        return None
    if not isinstance(meta, dict) or not isinstance(tests, dict):
        rep.refuse("task.yaml and tests.json must each hold a mapping")
        return None
    if meta.get("__error__"):
        rep.refuse(str(meta["__error__"]))
        return None
    why = _unmappable(src, meta, tests)
    if why:
        rep.refuse(why)
        return None
    prompt = (src / "problem_statement.md").read_text(errors="replace")
    env = None
    if (src / "Dockerfile").is_file():  # its own folder as the context: nothing else of the task reaches the image
        with tempfile.TemporaryDirectory(prefix="assay-swe-ctx-") as ctx:
            shutil.copy2(src / "Dockerfile", Path(ctx) / "Dockerfile")
            env = dockerfile_environment(dst, Path(ctx) / "Dockerfile", Path(ctx), rep)
        if env is None:
            return None
    repo, commit = str(meta["repo"]), str(meta["base_commit"])
    with tempfile.TemporaryDirectory(prefix="assay-swe-") as tmp:
        scratch = Path(tmp)
        try:
            base = find_snapshot(repos, repo, commit, scratch)
            patched = apply(base, (src / "test.patch").read_text(), scratch, "test.patch")
            gold = apply(base, (src / "gold.patch").read_text(), scratch, "gold.patch") \
                if (src / "gold.patch").is_file() else None
        except RepoError as e:
            rep.refuse(str(e))
            return None
        shutil.copytree(base, dst / "workspace", symlinks=True, ignore=shutil.ignore_patterns(".git"))
        rep.mapped.append(f"repo {repo} at base_commit {commit[:12]} -> workspace/ (from {base.name})")
        f2p, p2p = list(tests["FAIL_TO_PASS"]), list(tests.get("PASS_TO_PASS") or [])
        ini = inifile(patched.tree)
        named = [i.split("::", 1)[0] for i in [*f2p, *p2p]]
        restore = sorted({*patched.changed, *(p for p in named if (patched.tree / p).is_file()),
                          *conftests(patched.tree), *([ini] if ini else [])})
        copy_files(patched.tree, restore, dst / "hidden" / "repo_tests")
        rep.mapped.append(f"test.patch -> hidden/repo_tests ({len(patched.changed)} file(s) after the patch, "
                          f"{len(patched.deleted)} deleted), written over the verifier's copy only")
        pythonpath = ["src"] if (base / "src").is_dir() else ["."]
        rep.approximated.append(
            f"SWE-bench's image installs the repository and its {meta.get('version') or ''} dependencies; here "
            f"nothing is installed: {pythonpath[0]}/ is put on sys.path before site-packages and the tests run "
            "with the verifier's python and pytest (plugins not autoloaded, addopts emptied)")
        task: dict[str, Any] = {"category": task_id(repo.replace("/", "-")), "verifier_timeout_s": TIMEOUT_S + 30,
                                **({"environment": env} if env else {}),
                                "predicates": [{"id": "tests", "kind": "test_lists", "fail_to_pass": f2p,
                                                "pass_to_pass": p2p, "restore": "repo_tests",
                                                "deleted": patched.deleted, "inifile": ini,
                                                "pythonpath": pythonpath, "timeout_s": TIMEOUT_S}]}
        rep.mapped.append(f"FAIL_TO_PASS ({len(f2p)}) / PASS_TO_PASS ({len(p2p)}) -> a test_lists predicate")
        if gold is not None:
            _solution(dst, gold, (src / "gold.patch").read_text())
            rep.mapped.append("gold.patch -> solution/ (its files after the patch, copied by solve.sh)")
        else:
            task["solution"] = None
            rep.unmapped.append("no gold patch: the task has no reference solution")
    if (src / "eval.sh").is_file():
        rep.approximated.append("eval.sh is not run: the test_lists predicate applies the test patch and runs "
                                "the named tests itself")
    if not meta.get("hints_text") and (src / "hints.md").is_file():  # the format keeps the hints in their own file
        meta["hints_text"] = (src / "hints.md").read_text(errors="replace")
    if meta.get("hints_text"):
        rep.approximated.append("hints_text kept in extra.source.metadata, not shown to the agent")
    kept = metadata(meta, META_KEYS)
    task["tags"] = sorted({"swe-bench", task_id(repo.rsplit("/", 1)[-1])})
    task["extra"] = {"source": {"format": "swe-bench", "path": str(meta.get("__source__") or src), "metadata": kept}}
    rep.mapped.append("instance_id, repo, version, created_at, ... -> extra.source.metadata")
    if (src / "assets").is_dir():
        rep.unmapped.append("assets/ (binary files for the patches) are not read by this importer")
    write_task(dst, task, prompt, rep)
    rep.mapped.append("problem_statement.md -> prompt.md")
    return str(task["category"])


def _unmappable(src: Path, meta: dict[str, Any], tests: dict[str, Any]) -> str | None:
    """Why the task cannot be imported, or None."""
    for key in ("repo", "base_commit"):
        if not meta.get(key):
            return f"task.yaml has no {key}"
    ps = src / "problem_statement.md"
    if not ps.is_file() or not ps.read_text(errors="replace").strip():
        return "problem_statement.md is missing or empty: there is no prompt"
    if not (src / "test.patch").is_file():
        return "test.patch is missing: nothing grades this task"
    f2p, p2p = tests.get("FAIL_TO_PASS"), tests.get("PASS_TO_PASS") or []
    if not isinstance(f2p, list) or not f2p or not isinstance(p2p, list):
        return "tests.json: FAIL_TO_PASS is empty or not a list: nothing grades this task"
    if meta.get("eval_type") not in (None, "pass_and_fail"):
        return f"eval_type {meta['eval_type']!r}: only pass_and_fail is mapped"
    parser = str(meta.get("log_parser") or "parse_log_pytest")
    if not parser.startswith("parse_log_pytest"):
        return f"log_parser {parser!r}: a non-pytest harness has no mapping (only parse_log_pytest*)"
    bad = [i for i in [*f2p, *p2p] if not isinstance(i, str) or not PYTEST_ID.match(i)]
    if bad:
        return (f"test id {bad[0]!r} is not a pytest node id (path.py::name): the repository's own runner "
                "(e.g. Django's runtests.py, SymPy's bin/test) has no mapping")
    dockerfile = src / "Dockerfile"
    if dockerfile.is_file():
        first = next((ln.split()[1] for ln in dockerfile.read_text(errors="replace").splitlines()
                      if ln.strip().upper().startswith("FROM ") and len(ln.split()) > 1), "")
        if not first or "sweb" in first or "swebench" in first:
            return f"Dockerfile FROM {first or '?'}: SWE-bench's prebuilt environment image cannot be fetched here"
    elif meta.get("image"):
        return f"image {meta['image']!r}: a prebuilt image cannot be fetched here"
    return None


def _solution(dst: Path, gold: Any, patch: str) -> None:
    sol = dst / "solution"
    copy_files(gold.tree, gold.changed, sol / "files")
    with open(sol / "gold.patch", "w", newline="") as f:
        f.write(patch)
    rm = " ".join(shlex.quote(p) for p in gold.deleted)
    (sol / "solve.sh").write_text(
        "#!/bin/sh\n# SWE-bench's gold patch: the files it leaves copied over the workspace, the ones it deletes "
        "removed\nset -e\ncd \"$ASSAY_WORKSPACE\"\n"
        + ("cp -a \"$ASSAY_SOLUTION_DIR/files/.\" .\n" if gold.changed else "")
        + (f"rm -rf -- {rm}\n" if rm else ""))
    (sol / "solve.sh").chmod(0o755)
