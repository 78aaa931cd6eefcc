"""Importing real Harbor and Terminal-Bench 1 tasks (tests/fixtures/import, see ATTRIBUTION.md):
every field lands in assay's own, each task's mapping report says what was approximated or could
not map, bad tasks are left out with their reason while the rest goes on, and the output suite is
written whole or not at all."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from assay.cli.main import main
from assay.errors import UsageError
from assay.importers import import_suite
from assay.spec.load import load_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def task_yaml(suite: Path, tid: str) -> dict:
    return yaml.safe_load((suite / "tasks" / tid / "task.yaml").read_text())


def test_harbor_fields_map_to_assays_own(tmp_path: Path) -> None:
    out = tmp_path / "h"
    rep = import_suite("harbor", FIXTURES / "harbor", out)
    assert sorted(t.id for t in rep.tasks if t.imported) == ["multi-reward", "simple-task"]
    suite = load_suite(out)
    t = {x.id: x for x in suite.tasks}["simple-task"]
    assert t.prompt.strip() == (FIXTURES / "harbor/simple-task/instruction.md").read_text().strip()
    s = t.spec
    assert s.budget.wall_time_s == 120 and s.verifier_timeout_s >= 120 and s.build_timeout_s == 600
    assert s.limits is not None and (s.limits.cpus, s.limits.memory_mb, s.limits.disk_mb) == (1, 2048, 10240)
    assert s.environment is not None and s.environment.dockerfile == "environment/Dockerfile"
    assert s.environment.base == "debian:bookworm"
    [pred] = s.predicates
    assert pred.kind == "reward_file" and pred.threshold == 1.0
    assert (t.dir / "hidden/tests/test_state.py").is_file() and (t.dir / "solution/solve.sh").is_file()
    assert s.extra["source"]["format"] == "harbor"
    simple = {x.id: x for x in rep.tasks}["simple-task"]
    assert any("FROM ubuntu:24.04 mapped to debian:bookworm" in a for a in simple.approximated)
    # the stock uv bootstrap (its only fetches) is replaced by the image's pytest, the reward logic kept
    assert any("uv bootstrap" in a and "astral.sh" in a for a in simple.approximated)
    offline = (t.dir / "hidden/tests/test.sh").read_text()
    assert "python3 -I -m pytest" in offline and "/tests/test_state.py -rA" in offline
    assert "curl" not in offline and "uvx" not in offline and "echo 1 > /logs/verifier/reward.txt" in offline
    # the flags travel with the task into every run's manifest
    assert any(d.startswith("FROM ubuntu:24.04") for d in s.deviations)
    assert any("uv bootstrap" in d for d in s.deviations)


def test_a_harbor_script_that_fetches_anything_else_runs_as_shipped(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "fetches-more")
    script = src / "fetches-more/tests/test.sh"
    # (a `pip install requests` is moved to the verifier's image now: tests/environments/test_verifier_extends.py)
    script.write_text(script.read_text().replace("source $HOME", "pip install -r /tests/req.txt\nsource $HOME"))
    [r] = import_suite("harbor", src, tmp_path / "out").tasks
    assert any("fetches from the network at test time" in u and "pip install" in u for u in r.unmapped)
    assert (tmp_path / "out/tasks/fetches-more/hidden/tests/test.sh").read_text() == script.read_text()


def test_harbor_refuses_a_compose_task_and_says_why(tmp_path: Path) -> None:
    out = tmp_path / "h"
    import_suite("harbor", FIXTURES / "harbor", out)
    report = json.loads((out / "import-report.json").read_text())
    multi = {t["id"]: t for t in report["tasks"]}["multi-container"]
    assert not multi["imported"] and "docker-compose.yaml" in multi["refused"][0]
    assert not (out / "tasks" / "multi-container").exists()
    md = (out / "import-report.md").read_text()
    assert "multi-container: NOT imported" in md and "the importer's choice" in md
    assert report["weights"] == {"default": 1.0}


def test_terminal_bench_1_maps_to_pytest_in_the_image(tmp_path: Path) -> None:
    out = tmp_path / "t"
    rep = import_suite("terminal-bench", FIXTURES / "terminal-bench", out)
    assert all(t.imported for t in rep.tasks) and len(rep.tasks) == 2
    suite = load_suite(out)
    t = {x.id: x for x in suite.tasks}["evoeval-0"]
    assert "has_close_elements_in_range" in t.prompt
    s = t.spec
    assert s.category == "python_programming" and [c.id for c in suite.spec.categories] == ["python_programming"]
    assert s.budget.wall_time_s == 600
    assert [(p.kind, p.tests) for p in s.predicates] == [("pytest", "tests/test_outputs.py")]
    assert s.env.verifier == {"TEST_DIR": "/verifier/hidden/tests"}
    meta = s.extra["source"]["metadata"]
    assert meta["difficulty"] == "easy" and meta["author_name"] == "unknown"
    assert s.tags == ["evoeval", "programming", "python"]
    r = rep.tasks[0]
    assert any("python-3-13" in a and "debian:trixie" in a and "Python is 3.13" in a for a in r.approximated)
    assert any("run-tests.sh's network bootstrap" in a for a in r.approximated)


def _broken_collection(root: Path) -> Path:
    """The real Harbor fixtures plus one broken copy of simple-task per kind of bad input."""
    src = root / "src"
    shutil.copytree(FIXTURES / "harbor", src)
    good = src / "simple-task"
    for name in ("bad-toml", "no-instruction", "refused-dockerfile", "no-reward", "no-tests"):
        shutil.copytree(good, src / name)
    (src / "bad-toml/task.toml").write_text("[agent\ntimeout_sec = ")
    (src / "no-instruction/instruction.md").unlink()
    with open(src / "refused-dockerfile/environment/Dockerfile", "a") as f:
        f.write("ENTRYPOINT [\"/start.sh\"]\n")
    (src / "no-reward/tests/test.sh").write_text("#!/bin/bash\npytest /tests/test_state.py\n")
    shutil.rmtree(src / "no-tests/tests")
    return src


def test_bad_tasks_are_left_out_with_their_reason_and_the_rest_goes_on(tmp_path: Path, capsys) -> None:
    src = _broken_collection(tmp_path)
    out = tmp_path / "suite"
    assert main(["import", "harbor", str(src), "-o", str(out)]) == 1
    output = capsys.readouterr().out
    report = {t["id"]: t for t in json.loads((out / "import-report.json").read_text())["tasks"]}
    why = {k: " ".join(v["refused"]) for k, v in report.items() if not v["imported"]}
    assert "not valid TOML" in why["bad-toml"]
    assert "instruction.md is missing" in why["no-instruction"]
    assert "ENTRYPOINT" in why["refused-dockerfile"] and "Dockerfile" in why["refused-dockerfile"]
    assert "writes no reward" in why["no-reward"]
    assert "tests/test.sh is missing" in why["no-tests"]
    assert {t.id for t in load_suite(out).tasks} == {"simple-task", "multi-reward"}
    for name in why:
        assert f"NOT imported {name}" in output
        assert not (out / "tasks" / name).exists()


def test_terminal_bench_bad_input(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "terminal-bench", src)
    for name in ("bad-yaml", "no-instruction", "other-parser"):
        shutil.copytree(src / "evoeval-0", src / name)
    (src / "bad-yaml/task.yaml").write_text("instruction: [unclosed\n")
    doc = yaml.safe_load((src / "no-instruction/task.yaml").read_text())
    doc.pop("instruction")
    (src / "no-instruction/task.yaml").write_text(yaml.safe_dump(doc))
    doc = yaml.safe_load((src / "other-parser/task.yaml").read_text())
    (src / "other-parser/task.yaml").write_text(yaml.safe_dump({**doc, "parser_name": "swebench"}))
    rep = import_suite("terminal-bench", src, tmp_path / "out")
    why = {t.id: " ".join(t.refused) for t in rep.left_out}
    assert set(why) == {"bad-yaml", "no-instruction", "other-parser"}
    assert "not valid YAML" in why["bad-yaml"] and "no instruction" in why["no-instruction"]
    assert "parser_name 'swebench'" in why["other-parser"]
    assert {t.id for t in load_suite(tmp_path / "out").tasks} == {"evoeval-0", "evoeval-1"}


def test_a_custom_run_tests_sh_is_the_test_command(tmp_path: Path) -> None:
    """Terminal-Bench runs any run-tests.sh at /tests with $TEST_DIR=/tests and reads its output with
    the pytest parser; the importer maps it so (it was refused before), flagging its fetches."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "terminal-bench/evoeval-0", src / "custom")
    (src / "custom/run-tests.sh").write_text("#!/bin/bash\npip install pytest\ncd /app\n"
                                             "python3 -m pytest $TEST_DIR/test_outputs.py -rA\n")
    rep = import_suite("terminal-bench", src, tmp_path / "out")
    [r] = rep.tasks
    assert r.imported, r.refused
    t = load_suite(tmp_path / "out").tasks[0]
    [pred] = t.spec.predicates
    assert (pred.kind, pred.reads, pred.tests, pred.script) == ("reward_file", "pytest_summary", "tests",
                                                                "run-tests.sh")
    assert (t.dir / "hidden/tests/run-tests.sh").read_text() == (src / "custom/run-tests.sh").read_text()
    assert (t.dir / "hidden/tests/test_outputs.py").is_file()
    assert t.spec.env.verifier == {"TEST_DIR": "/tests"}
    assert any("run-tests.sh fetches from the network" in u and "pip install" in u for u in r.unmapped)
    (src / "custom/run-tests.sh").write_text("cd /app\npython3 -m pytest $TEST_DIR/test_outputs.py -rA\n")
    [r] = import_suite("terminal-bench", src, tmp_path / "out2").tasks
    script = (tmp_path / "out2/tasks/custom/hidden/tests/run-tests.sh").read_text()
    assert script.startswith("#!/bin/bash\ncd /app\n") and any("no #! line" in a for a in r.approximated)


def test_nothing_half_written(tmp_path: Path) -> None:
    out = tmp_path / "suite"
    out.mkdir()
    with pytest.raises(UsageError, match="already exists"):
        import_suite("harbor", FIXTURES / "harbor", out)
    assert list(out.iterdir()) == []
    src = tmp_path / "only-bad"
    shutil.copytree(FIXTURES / "harbor/multi-container", src / "multi-container")
    with pytest.raises(UsageError, match="no task could be imported"):
        import_suite("harbor", src, tmp_path / "none")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["only-bad", "suite"]  # no staging folder left


def test_cli_usage_errors_exit_2(tmp_path: Path) -> None:
    assert main(["import", "harbor", str(tmp_path), "-o", str(tmp_path / "x")]) == 2  # no task.toml under it
    assert main(["import", "terminal-bench", str(FIXTURES / "terminal-bench"), "-o", str(tmp_path / "t")]) == 0
    assert main(["import", "harbor", str(FIXTURES / "harbor"), "-o", str(tmp_path / "t")]) == 2  # exists
    assert not (tmp_path / "x").exists()


def test_time_estimates_and_authorship_are_kept(tmp_path: Path) -> None:
    """Metadata the agent never sees is kept on the task as the source wrote it (no shipped fixture
    has time estimates, so they are added here in each format's own spelling)."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "h" / "simple-task")
    with open(src / "h/simple-task/task.toml", "a") as f:
        f.write('\n[metadata]\ndifficulty = "easy"\nauthor_name = "A. Author"\nexpert_time_estimate_min = 5\n'
                'junior_time_estimate_min = 20\ntags = ["files"]\n')
    import_suite("harbor", src / "h", tmp_path / "hs")
    meta = task_yaml(tmp_path / "hs", "simple-task")["extra"]["source"]["metadata"]
    assert (meta["expert_time_estimate_min"], meta["junior_time_estimate_min"], meta["author_name"]) == (5, 20,
                                                                                                       "A. Author")
    shutil.copytree(FIXTURES / "terminal-bench/evoeval-0", src / "t" / "evoeval-0")
    doc = yaml.safe_load((src / "t/evoeval-0/task.yaml").read_text())
    doc.update(expert_time_estimate_min=3, junior_time_estimate_min=9)
    (src / "t/evoeval-0/task.yaml").write_text(yaml.safe_dump(doc))
    import_suite("terminal-bench", src / "t", tmp_path / "ts")
    meta = task_yaml(tmp_path / "ts", "evoeval-0")["extra"]["source"]["metadata"]
    assert (meta["expert_time_estimate_min"], meta["junior_time_estimate_min"]) == (3, 9)


def test_difficulty_authors_and_time_estimates_are_typed_and_reach_the_manifest(tmp_path: Path) -> None:
    """What a real TermiGen task.toml carries ([metadata] difficulty, author, expert/junior minutes)
    becomes the task's typed ``metadata:`` and the run manifest's task record; a value that is not
    a number is named in the report and left out, never a failed import."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "h" / "simple-task")
    with open(src / "h/simple-task/task.toml", "a") as f:
        f.write('\n[metadata]\nauthor_name = "Terminal Bench"\nauthor_email = "bench@example.com"\n'
                'difficulty = "medium"\nexpert_time_estimate_min = 30.0\njunior_time_estimate_min = "n/a"\n')
    import_suite("harbor", src / "h", tmp_path / "hs")
    [task] = load_suite(tmp_path / "hs").tasks
    meta = task.spec.metadata
    assert meta is not None and meta.difficulty == "medium" and meta.expert_time_min == 30.0
    assert meta.junior_time_min is None and [(a.name, a.email) for a in meta.authors] == [("Terminal Bench",
                                                                                          "bench@example.com")]
    report = json.loads((tmp_path / "hs" / "import-report.json").read_text())
    [rep] = [t for t in report["tasks"] if t["id"] == "simple-task"]
    assert any("junior_time_estimate_min 'n/a'" in u for u in rep["unmapped"])
    assert task.spec.extra["source"]["metadata"]["junior_time_estimate_min"] == "n/a"  # kept as written


def test_a_harbor_solution_folder_is_imported_whole_and_its_oracle_passes(tmp_path: Path) -> None:
    """A reference solution may ship files beside solve.sh and name them by Harbor's /solution path
    (a real math-modelling collection's do, under /solution/oracle/): the whole folder is the
    oracle's, at /solution too; the agent sees none of it."""
    from assay.run import RunOptions, start_run
    from tests.environments.conftest import _why_not

    src = tmp_path / "src" / "simple-task"
    shutil.copytree(FIXTURES / "harbor/simple-task", src)
    (src / "solution" / "data").mkdir()
    (src / "solution" / "data" / "greeting.txt").write_text("Hello, world!\n")
    (src / "solution" / "solve.sh").write_text('#!/bin/bash\nset -euo pipefail\n'  # Harbor's path, by name
                                               'cp /solution/data/greeting.txt hello.txt\n')
    import_suite("harbor", tmp_path / "src", tmp_path / "suite")
    assert (tmp_path / "suite/tasks/simple-task/solution/data/greeting.txt").read_text() == "Hello, world!\n"
    if (why := _why_not()) is not None:
        pytest.skip(why)
    results = start_run(RunOptions(suite=tmp_path / "suite", agents=["oracle", "nop"], sandbox="bwrap",
                                   out=tmp_path / "run")).results
    got = {r.agent: r.end_state.value for r in results}
    assert got == {"oracle": "pass", "nop": "fail"}, [(r.agent, r.reason, r.errors) for r in results]
    assert yaml.safe_load((tmp_path / "suite/tasks/simple-task/task.yaml").read_text())["solution_dir"] == "/solution"
    # the probe standing in for the do-nothing agent finds no solution anywhere it can read
    from assay.agents.builtin import NopAgent, OracleAgent
    from assay.run.exposure import audit_exposure

    report = audit_exposure(tmp_path / "suite", agents=[OracleAgent({}), NopAgent({})], sandbox="bwrap")
    assert report.audited and not report.leaks, report.leaks


@pytest.mark.parametrize("value", [{"a": 1}, [60], "soon", -5, True, 0, float("inf")])
def test_a_terminal_bench_timeout_that_is_not_a_number_leaves_the_task_out(tmp_path: Path, value) -> None:
    """``max_agent_timeout_sec: {a: 1}`` (or a list) was a TypeError traceback that stopped the
    whole import (a random mutation of the shipped fixtures found it)."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "terminal-bench", src)
    for key in ("max_agent_timeout_sec", "max_test_timeout_sec"):
        shutil.copytree(src / "evoeval-0", src / f"bad-{key}")
        doc = yaml.safe_load((src / f"bad-{key}/task.yaml").read_text())
        (src / f"bad-{key}/task.yaml").write_text(yaml.safe_dump({**doc, key: value}))
    rep = import_suite("terminal-bench", src, tmp_path / "out")
    why = {t.id: " ".join(t.refused) for t in rep.left_out}
    assert set(why) == {"bad-max_agent_timeout_sec", "bad-max_test_timeout_sec"}
    for key in ("max_agent_timeout_sec", "max_test_timeout_sec"):
        assert key in why[f"bad-{key}"], why
    assert {t.id for t in load_suite(tmp_path / "out").tasks} == {"evoeval-0", "evoeval-1"}


def test_a_field_of_the_wrong_type_anywhere_leaves_that_task_out_not_the_import(tmp_path: Path, monkeypatch) -> None:
    """Whatever a format's converter trips on in one task (a TypeError, KeyError, AttributeError
    it did not foresee) is that task's refusal with the error named, never a traceback."""
    from assay.importers import terminal_bench

    real = terminal_bench.write_task_folder

    def trips_on_one(src: Path, dst: Path, rep):
        if src.name == "evoeval-1":
            raise AttributeError("'list' object has no attribute 'get'")
        return real(src, dst, rep)

    monkeypatch.setattr(terminal_bench, "write_task_folder", trips_on_one)
    rep = import_suite("terminal-bench", FIXTURES / "terminal-bench", tmp_path / "out")
    why = {t.id: " ".join(t.refused) for t in rep.left_out}
    assert set(why) == {"evoeval-1"} and "AttributeError" in why["evoeval-1"], why
    assert {t.id for t in load_suite(tmp_path / "out").tasks} == {"evoeval-0"}


@pytest.mark.parametrize("value", ['"soon"', "-5", "true", "0", "[60]", "{a = 1}", "inf"])
def test_a_harbor_timeout_that_is_not_a_number_leaves_the_task_out(tmp_path: Path, value: str) -> None:
    """Harbor's ``timeout_sec`` fields go through the same check as Terminal-Bench's: a value that
    is not a positive number of seconds leaves that task out, naming the field."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor" / "simple-task", src / "simple-task")
    fields = {"agent": "agent.timeout_sec", "verifier": "verifier.timeout_sec",
              "environment": "environment.build_timeout_sec"}
    for table, field in fields.items():
        bad = src / f"bad-{table}"
        shutil.copytree(src / "simple-task", bad)
        toml = (bad / "task.toml").read_text()
        key = field.split(".")[1]
        start = toml.index(f"[{table}]")
        line = next(i for i in range(start, len(toml)) if toml.startswith(key, i))
        end = toml.index("\n", line)
        (bad / "task.toml").write_text(toml[:line] + f"{key} = {value}" + toml[end:])
    rep = import_suite("harbor", src, tmp_path / "out")
    why = {t.id: " ".join(t.refused) for t in rep.left_out}
    assert set(why) == {f"bad-{t}" for t in fields}, why
    for table, field in fields.items():
        assert field in why[f"bad-{table}"], why
    assert {t.id for t in load_suite(tmp_path / "out").tasks} == {"simple-task"}


def test_the_report_says_when_a_stage_is_built_on_the_release_of_the_others(tmp_path: Path) -> None:
    """A `rust:1.85-bookworm` builder goes to trixie (Rust 1.85), so the `debian:bookworm-slim`
    final stage that runs its binary is built on trixie too (one C library). The run's manifest
    said so; the import report did not, since it read each FROM alone."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "two-stage")
    (src / "two-stage/environment/Dockerfile").write_text(
        "FROM rust:1.85-bookworm AS builder\nRUN cargo --version\n"
        "FROM debian:bookworm-slim\nCOPY --from=builder /usr/bin/cargo /usr/local/bin/cargo\nWORKDIR /app\n")
    [r] = import_suite("harbor", src, tmp_path / "out").tasks
    said = [a for a in r.approximated if "with the image's other stages" in a]
    assert said == ["FROM debian:bookworm-slim built on debian:trixie with the image's other stages (what one "
                    "stage copies from another needs one C library)"], r.approximated


def test_the_report_says_a_dropped_package_is_installed_as_its_successor(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "mesa")
    (src / "mesa/environment/Dockerfile").write_text(
        "FROM python:3.13-slim-bookworm\nRUN apt-get update && apt-get install -y libgl1-mesa-glx\nWORKDIR /app\n")
    [r] = import_suite("harbor", src, tmp_path / "out").tasks
    assert [a for a in r.approximated if "transitional" in a] == [
        "Dockerfile:2: libgl1-mesa-glx installed as libgl1 libglx-mesa0 (Debian trixie has no libgl1-mesa-glx, a "
        "transitional package of the release python:3.13-slim-bookworm names)"], r.approximated


def test_a_harbor_task_that_names_no_network_is_said_to_lose_harbors_default_internet(tmp_path: Path) -> None:
    """Every official Terminal-Bench 2.0 task names no network_mode; Harbor's default is public (the
    internet, where an agent may install what it wants). Here the agent has the run's --network,
    never the internet: the same as an explicit `public`, which was said, while the default was not."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "default-net")
    [r] = import_suite("harbor", src, tmp_path / "out").tasks
    assert any("no network_mode: Harbor's default is public" in a for a in r.approximated), r.approximated
