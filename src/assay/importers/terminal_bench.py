"""Terminal-Bench 1 tasks: ``task.yaml`` (the instruction and metadata), ``Dockerfile`` (its build
context the task folder), ``run-tests.sh``, ``solution.sh``, ``tests/``. Their verdict is
pytest's over ``tests/`` (``parser_name: pytest``), so they map to assay's pytest predicate run
in the task's image. docs/import.md has the field table."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from assay.importers.common import (bash_when_bare, dockerfile_environment, metadata, network_lines, seconds,
                                    solution_fetches, task_id, typed_metadata, write_task)
from assay.importers.report import TaskReport
from assay.spec.environment_dockerfile import DockerfileError, parse
from assay.untrusted.yaml_doc import load_yaml

META_KEYS = ("difficulty", "category", "tags", "author_name", "author_email", "expert_time_estimate_min",
             "junior_time_estimate_min", "estimated_duration_sec")
#: files of the task folder that are the harness's, not the image's build context
NOT_CONTEXT = {"task.yaml", "solution.sh", "solution.yaml", "run-tests.sh", "tests", "docker-compose.yaml"}
#: the stock run-tests.sh: install uv from the network, then ``uv run pytest $TEST_DIR/<file>``
_STOCK_PYTEST = re.compile(r"^\s*uv run pytest\s+((?:\$TEST_DIR/\S+\.py\s*)+)(-rA)?\s*$", re.M)
#: where the hidden tests are seen by the verifier's pytest (Terminal-Bench's $TEST_DIR)
TEST_DIR = "/verifier/hidden/tests"
#: a run-tests.sh that is not the stock runner: run as shipped, its output read by the pytest parser
CUSTOM = "run-tests.sh"


def find_tasks(src: Path) -> list[Path]:
    """``src`` itself when it is a task, else every folder under it holding a task.yaml."""
    if (src / "task.yaml").is_file():
        return [src]
    return sorted(p.parent for p in src.rglob("task.yaml") if p.is_file())


def _harness_files_stay_out(dockerfile: Path, rep: TaskReport) -> bool:
    """False (the task refused) when the Dockerfile copies the harness's own files into the image
    the agent works in: the agent would read its tests or its reference solution. A copy of the
    whole folder (``COPY . /app``) is built without them, and the report says so. A Dockerfile the
    reader refuses is left to :func:`dockerfile_environment`, which names why."""
    try:
        df = parse(dockerfile)
    except (DockerfileError, OSError, UnicodeDecodeError):
        return True
    harness = NOT_CONTEXT - {"task.yaml", "docker-compose.yaml"}  # the tests and the reference solution
    for step in df.every_step():  # a builder stage's copies too
        for source in step.sources if step.kind == "copy" and step.from_stage is None else ():
            first = source.strip("/").removeprefix("./").split("/", 1)[0]
            if first in harness:
                rep.refuse(f"Dockerfile:{step.line} copies the harness's own {source!r} into the image the agent "
                           "works in: the agent would read its own tests or reference solution (assay gives the "
                           "tests to the verifier only; fix: copy it nowhere)")
                return False
            if first in ("", ".", "*"):
                rep.approximated.append(f"Dockerfile:{step.line} COPY {source} {step.dest}: the task folder without "
                                        f"the harness's own files ({', '.join(sorted(harness))}), left out so the agent never "
                                        "reads its tests or reference solution")
    return True


def write_task_folder(src: Path, dst: Path, rep: TaskReport) -> str | None:
    """One Terminal-Bench 1 task as an assay task in ``dst``; returns its category (None: refused)."""
    try:
        doc = load_yaml((src / "task.yaml").read_text())
    except yaml.YAMLError as e:
        rep.refuse(f"task.yaml is not valid YAML: {str(e).splitlines()[0]}")
        return None
    if not isinstance(doc, dict):
        rep.refuse("task.yaml is not a mapping")
        return None
    prompts = _prompts(doc, rep)
    if prompts is None or not _test_scripts(doc, rep):
        return None
    instruction, variants = prompts
    if doc.get("parser_name", "pytest") != "pytest":
        rep.refuse(f"parser_name {doc['parser_name']!r}: only pytest's verdict is mapped")
        return None
    compose = src / "docker-compose.yaml"
    if compose.is_file():
        try:
            services = (load_yaml(compose.read_text()) or {}).get("services", {})
        except yaml.YAMLError as e:
            rep.refuse(f"docker-compose.yaml is not valid YAML: {str(e).splitlines()[0]}")
            return None
        if len(services) > 1:
            rep.refuse(f"docker-compose.yaml has {len(services)} services: multi-container tasks cannot run here")
            return None
        rep.approximated.append("docker-compose.yaml (one service) read as the Dockerfile alone; its volumes "
                                "and TEST_DIR are the harness's own here")
    if not (src / "Dockerfile").is_file():
        rep.refuse("Dockerfile is missing")
        return None
    if not _harness_files_stay_out(src / "Dockerfile", rep):
        return None
    tests = _pytest_files(src, rep)
    if tests is None:
        return None
    custom = tests == [CUSTOM]
    task: dict[str, Any] = {"category": task_id(str(doc.get("category") or "default"))}
    ctx = dst / ".context"
    ctx.mkdir()
    for p in src.iterdir():
        if p.name not in NOT_CONTEXT:
            (shutil.copytree(p, ctx / p.name, symlinks=True) if p.is_dir() and not p.is_symlink()
             else shutil.copy2(p, ctx / p.name, follow_symlinks=False))
    env = dockerfile_environment(dst, ctx / "Dockerfile", ctx, rep)
    shutil.rmtree(ctx)
    if env is None:
        return None
    task["environment"] = env
    if doc.get("max_agent_timeout_sec") is not None:  # 0 too is checked as given, never silently the default
        task["budget"] = {"wall_time_s": seconds(doc["max_agent_timeout_sec"], "max_agent_timeout_sec")}
        rep.mapped.append("max_agent_timeout_sec -> budget.wall_time_s")
    given = doc.get("max_test_timeout_sec")
    test_timeout = seconds(60 if given is None else given, "max_test_timeout_sec")
    task["verifier_timeout_s"] = test_timeout + 30
    rep.mapped.append("max_test_timeout_sec -> the pytest predicate's timeout_s")
    shutil.copytree(src / "tests", dst / "hidden" / "tests", symlinks=True)
    if custom:
        _custom_runner(src, dst, task, test_timeout, rep)
    else:
        task["env"] = {"verifier": {"TEST_DIR": TEST_DIR}}
        rep.mapped.append(f"tests/ -> hidden/tests ($TEST_DIR = {TEST_DIR} for the verifier)")
        task["predicates"] = [{"id": f"pytest-{Path(t).stem}", "kind": "pytest", "tests": f"tests/{t}",
                               "timeout_s": test_timeout} for t in tests]
        rep.mapped.append(f"pytest over {', '.join(tests)} -> pytest predicate(s), run by the image's python3")
    if (src / "solution.sh").is_file():
        (dst / "solution").mkdir()
        shutil.copy2(src / "solution.sh", dst / "solution" / "solve.sh")
        rep.mapped.append("solution.sh -> solution (the oracle)")
        solution_fetches(src / "solution.sh", rep, "solution.sh")
        bash_when_bare(dst / "solution" / "solve.sh", "solution.sh", rep, "Terminal-Bench")
    else:
        task["solution"] = None
        why = "solution.yaml (terminal commands) is not converted" if (src / "solution.yaml").is_file() else "none shipped"
        rep.unmapped.append(f"no reference solution: {why}")
    for k in ("run_tests_in_same_shell", "disable_asciinema"):
        if k in doc:
            rep.unmapped.append(f"{k}: a Terminal-Bench harness setting with no meaning here")
    task["tags"] = sorted({str(t) for t in doc.get("tags") or []})
    task["extra"] = {"source": {"format": "terminal-bench", "path": str(src), "metadata": metadata(doc, META_KEYS)}}
    typed_metadata(task, doc, rep)
    rep.mapped.append("metadata (difficulty, author, tags, time estimates) -> metadata (typed), tags, and as "
                      "written in extra.source.metadata")
    if variants:
        task["variants"] = variants
    write_task(dst, task, instruction, rep)
    return task["category"]


def _prompts(doc: dict[str, Any], rep: TaskReport) -> tuple[str, list[dict[str, str]]] | None:
    """The prompt and the prompt variants: ``instruction:``, or the first format's ``descriptions:``
    (``key: base`` the prompt, every other key a rewording run against the same tests, as
    Terminal-Bench ran each key as its own task over one set of tests). None: refused."""
    if "instruction" in doc or "descriptions" not in doc:
        instruction = doc.get("instruction")
        if not isinstance(instruction, str) or not instruction.strip():
            rep.refuse("task.yaml has no instruction: there is no prompt")
            return None
        rep.mapped.append("instruction -> prompt.md")
        return instruction, []
    descriptions = doc["descriptions"]
    if not isinstance(descriptions, list):
        rep.refuse("task.yaml descriptions is not a list of {key, description} (fix: a list, one item per prompt)")
        return None
    if not descriptions:
        rep.refuse("task.yaml has no instruction: its descriptions list is empty, there is no prompt")
        return None
    texts: dict[str, str] = {}
    for i, d in enumerate(descriptions):
        text = d.get("description") if isinstance(d, dict) else None
        if not isinstance(text, str) or not text.strip():
            rep.refuse(f"task.yaml descriptions[{i}] has no description text (fix: add `description: ...`)")
            return None
        key = task_id(str(d.get("key") or f"description-{i}"))
        if key in texts:
            rep.refuse(f"task.yaml descriptions names the key {key!r} twice (fix: one description per key)")
            return None
        texts[key] = text
    base = "base" if "base" in texts else next(iter(texts))
    if base != "base":
        rep.approximated.append(f"descriptions has no 'base' key: the first, {base!r}, is the prompt")
    others = [k for k in texts if k != base]
    rep.mapped.append(f"descriptions[{base}] -> prompt.md" + (
        f"; descriptions[{', '.join(others)}] -> prompt variants of the same tests (variants)" if others else ""))
    return texts[base], [{"id": k, "prompt": texts[k]} for k in others]


#: the test scripts of Terminal-Bench's own repository that its first task format names: install
#: uv and pytest, then run pytest over tests/test_outputs.py (what assay's pytest predicate does)
STOCK_TEST_SCRIPTS = ("setup-uv-pytest.sh", "run-uv-pytest.sh")


def _test_scripts(doc: dict[str, Any], rep: TaskReport) -> bool:
    """``test_scripts`` of the first format: the stock pair maps to the pytest predicate; any
    other is a script the task does not ship, so its tests cannot be run (False: refused)."""
    scripts = doc.get("test_scripts")
    if scripts is None:
        return True
    if not isinstance(scripts, list) or not all(isinstance(s, str) for s in scripts):
        rep.refuse("task.yaml test_scripts is not a list of script names")
        return False
    unknown = [s for s in scripts if s not in STOCK_TEST_SCRIPTS]
    if unknown:
        rep.refuse(f"task.yaml test_scripts names {', '.join(unknown)}: not a script the task ships, nor one of "
                   f"Terminal-Bench's stock {' and '.join(STOCK_TEST_SCRIPTS)} (fix: ship it as run-tests.sh)")
        return False
    rep.mapped.append(f"test_scripts ({', '.join(scripts)}: Terminal-Bench's stock uv and pytest) -> the image's "
                      "pytest over tests/")
    return True


def _custom_runner(src: Path, dst: Path, task: dict[str, Any], timeout_s: float, rep: TaskReport) -> None:
    """A custom run-tests.sh is the test command, as Terminal-Bench runs it: at /tests beside the
    tests, ``$TEST_DIR=/tests``, in the workdir, its output read by Terminal-Bench's pytest parser."""
    shutil.copy2(src / CUSTOM, dst / "hidden" / "tests" / CUSTOM)
    bash_when_bare(dst / "hidden" / "tests" / CUSTOM, "run-tests.sh", rep, "Terminal-Bench")
    task["env"] = {"verifier": {"TEST_DIR": "/tests"}}
    rep.mapped.append("tests/ + run-tests.sh -> hidden/tests, seen at /tests ($TEST_DIR = /tests for the verifier)")
    task["predicates"] = [{"id": "run-tests", "kind": "reward_file", "reads": "pytest_summary", "tests": "tests",
                           "script": CUSTOM, "timeout_s": timeout_s}]
    rep.mapped.append("run-tests.sh (custom) -> reward_file predicate reading its output as Terminal-Bench's "
                      "pytest parser does (pass: at least one result, every one PASSED)")
    fetches = network_lines(src / CUSTOM)
    if fetches:
        rep.unmapped.append("run-tests.sh fetches from the network at test time; the verifier has no network "
                            "here, so the script runs as shipped and may fail: " + "; ".join(fetches[:4]))


def _pytest_files(src: Path, rep: TaskReport) -> list[str] | None:
    """The test files pytest runs: the stock run-tests.sh's, Terminal-Bench's default, or
    ``[CUSTOM]`` for any other run-tests.sh (run as shipped)."""
    if not (src / "tests").is_dir():
        rep.refuse("tests/ is missing")
        return None
    script = src / "run-tests.sh"
    if not script.is_file():
        if not (src / "tests" / "test_outputs.py").is_file():
            rep.refuse("no run-tests.sh and no tests/test_outputs.py")
            return None
        return ["test_outputs.py"]
    m = _STOCK_PYTEST.search(script.read_text(errors="replace"))
    if m is None:
        return [CUSTOM]
    files = [f.removeprefix("$TEST_DIR/") for f in m.group(1).split()]
    missing = [f for f in files if not (src / "tests" / f).is_file()]
    if missing:
        rep.refuse(f"run-tests.sh runs {', '.join(missing)}, which tests/ does not hold")
        return None
    fetches = network_lines(script)
    rep.approximated.append("run-tests.sh's network bootstrap (" + "; ".join(fetches[:3]) + ") replaced by the "
                            "image's Debian python3-pytest; pytest's version may differ")
    return files
