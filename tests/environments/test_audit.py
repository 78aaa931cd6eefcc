"""``assay audit`` over an imported real suite (Terminal-Bench 1 fixtures), with planted faults
one per label: the shipped tasks are valid, a task whose solution was taken away has no reference
solution, one whose solution is wrong is unsolvable as shipped, one whose hidden test checks
nothing is weak; a Harbor task whose test script fetches more than the stock uv bootstrap needs
the network.
``--keep valid`` writes the valid subset as a new suite version that loads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from assay.cli.main import main
from assay.environments.store import ImageStore
from assay.importers import import_suite
from assay.spec.load import load_suite
from tests.environments.conftest import oracle_and_nop

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def _planted(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "terminal-bench", src)
    for name in ("no-solution", "wrong-solution", "checks-nothing"):
        shutil.copytree(src / "evoeval-0", src / name)
    (src / "no-solution/solution.sh").unlink()
    (src / "wrong-solution/solution.sh").write_text("#!/bin/bash\necho 'def has_close_elements_in_range(n, t):\n"
                                                    "    return True' > /app/solution.py\n")
    (src / "checks-nothing/tests/test_outputs.py").write_text("def test_nothing():\n    pass\n")
    out = tmp_path / "suite"
    import_suite("terminal-bench", src, out)
    return out


def test_audit_labels_each_task(tmp_path: Path, image_store: ImageStore, capsys) -> None:
    suite = _planted(tmp_path)
    out = tmp_path / "audit"
    assert main(["audit", str(suite), "-o", str(out), "--keep", "valid"]) == 1  # not every task is valid
    doc = json.loads((out / "audit.json").read_text())
    labels = {t["task_id"]: t for t in doc["tasks"]}
    assert {k: v["label"] for k, v in labels.items()} == {
        "evoeval-0": "valid", "evoeval-1": "valid", "no-solution": "no reference solution",
        "wrong-solution": "unsolvable as shipped", "checks-nothing": "weak"}
    assert any("oracle fails predicate" in e for e in labels["wrong-solution"]["evidence"])
    assert any(e.startswith("nop passes") for e in labels["checks-nothing"]["evidence"])
    assert doc["counts"]["valid"] == 2
    md = (out / "audit.md").read_text()
    assert "| wrong-solution | unsolvable as shipped |" in md
    kept = load_suite(out / "suite")
    assert sorted(t.id for t in kept.tasks) == ["evoeval-0", "evoeval-1"]
    assert kept.spec.version.endswith("+audited")
    assert yaml.safe_load((out / "suite" / "suite.yaml").read_text())["tasks"] == ["evoeval-0", "evoeval-1"]


def test_harbor_tasks_that_fetch_at_test_time_need_the_network(tmp_path: Path, image_store: ImageStore) -> None:
    """The shipped Harbor tasks fetch only the stock uv bootstrap (run offline: solvable, nop fails);
    one whose script fetches something else runs as shipped, fails, and is labelled needs."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor", src)
    shutil.copytree(src / "simple-task", src / "fetches-more")
    script = src / "fetches-more/tests/test.sh"
    # (a `pip install requests` goes to the verifier's image now: tests/environments/test_verifier_extends.py)
    script.write_text(script.read_text().replace("source $HOME", "pip install -r /tests/req.txt\nsource $HOME"))
    suite = tmp_path / "suite"
    import_suite("harbor", src, suite)
    out = tmp_path / "audit"
    assert main(["audit", str(suite), "-o", str(out)]) == 1
    doc = json.loads((out / "audit.json").read_text())
    labels = {t["task_id"]: t for t in doc["tasks"]}
    need = labels.pop("fetches-more")
    assert need["label"] == "needs" and need["oracle"] == "fail", need
    assert any("network" in n for n in need["needs"])
    for t in labels.values():
        assert t["oracle"] == "pass" and t["nop"] == "fail" and t["label"] in ("valid", "weak"), t


def test_import_then_run_oracle_and_nop_from_the_command_line(tmp_path: Path, image_store: ImageStore) -> None:
    """Done means import, audit, then ``assay run --agent oracle,nop`` on the shipped fixtures: the
    Terminal-Bench 1 ones with the stock runner and with a custom run-tests.sh (run as shipped,
    read by Terminal-Bench's pytest parser) solve under the oracle and fail doing nothing."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "terminal-bench", src)
    shutil.copytree(src / "evoeval-0", src / "custom-runner")
    (src / "custom-runner/run-tests.sh").write_text(
        "#!/bin/bash\ncd /app\npython3 -m pytest -p no:cacheprovider $TEST_DIR/test_outputs.py -rA\n")
    suite = tmp_path / "suite"
    assert main(["import", "terminal-bench", str(src), "-o", str(suite)]) == 0
    assert main(["audit", str(suite), "-o", str(tmp_path / "audit")]) == 0  # every task valid
    out = tmp_path / "run"
    assert main(["run", str(suite), "-a", "oracle,nop", "-q", "-o", str(out)]) == 0  # a run that ends is exit 0
    rows = [json.loads(p.read_text()) for p in out.glob("trials/*/attempts/*/result.json")]
    got = {(r["task_id"], r["agent"]): r["end_state"] for r in rows}
    assert got == {(t, a): ("pass" if a == "oracle" else "fail") for t in ("evoeval-0", "evoeval-1", "custom-runner")
                   for a in ("oracle", "nop")}, got
    custom = next(r for r in rows if r["task_id"] == "custom-runner" and r["agent"] == "oracle")
    [pred] = custom["predicates"]
    assert pred["kind"] == "reward_file" and pred["evidence"]["summary"].endswith("passed")


def test_harbor_import_then_run_oracle_and_nop_from_the_command_line(tmp_path: Path, image_store: ImageStore) -> None:
    suite = tmp_path / "suite"
    assert main(["import", "harbor", str(FIXTURES / "harbor"), "-o", str(suite)]) == 1  # the compose task left out
    out = tmp_path / "run"
    assert main(["run", str(suite), "-a", "oracle,nop", "-q", "-o", str(out)]) == 0
    rows = [json.loads(p.read_text()) for p in out.glob("trials/*/attempts/*/result.json")]
    got = {(r["task_id"], r["agent"]): r["end_state"] for r in rows}
    assert got == {(t, a): ("pass" if a == "oracle" else "fail") for t in ("simple-task", "multi-reward")
                   for a in ("oracle", "nop")}, got


def test_a_task_whose_image_does_not_build_is_labelled_and_the_audit_goes_on(tmp_path: Path,
                                                                            image_store: ImageStore) -> None:
    """Auditing a real collection here meets images that cannot be built (media fetched from a
    host this machine cannot reach, a package built from source past its time). One such task
    refused the whole audit (exit 2, nothing written); now it is labelled, its file, line and
    build log named, and every other task is audited as before."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "good")
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "broken")
    with open(src / "broken/environment/Dockerfile", "a") as f:
        f.write("\nRUN echo cannot fetch the media here >&2 && exit 3\n")
    suite = tmp_path / "suite"
    import_suite("harbor", src, suite)
    out = tmp_path / "audit"
    assert main(["audit", str(suite), "-o", str(out), "--keep", "valid"]) == 1  # not every task is valid
    report = {t["task_id"]: t for t in json.loads((out / "audit.json").read_text())["tasks"]}
    assert report["good"]["label"] == "valid" and report["good"]["oracle"] == "pass"
    broken = report["broken"]
    assert broken["label"] == "image does not build" and broken["oracle"] is None
    why = " ".join(broken["evidence"])
    assert "Dockerfile" in why and "exit 3" in why and "cannot fetch the media here" in why, why
    assert "image does not build: 1" in (out / "audit.md").read_text()
    assert [t.id for t in load_suite(out / "suite").tasks] == ["good"]


def test_a_build_step_that_could_not_reach_its_host_makes_the_task_need_the_network(tmp_path: Path,
                                                                                  image_store: ImageStore) -> None:
    """A fetched task installs Rust with `RUN curl ... https://sh.rustup.rs | sh -s -- -y`. Here the
    host does not resolve, curl fails, the pipe's `sh` reads nothing and exits 0: the image builds
    without Rust, the oracle fails with `cargo: command not found`, and the audit said
    "unsolvable as shipped", blaming the task for this machine's network. The build log says what
    could not be reached; now the audit reads it and the task `needs` the network, naming the line."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "good")
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "silent-fetch")
    with open(src / "silent-fetch/environment/Dockerfile", "a") as f:  # .invalid never resolves, anywhere
        f.write("\nRUN python3 -c \"import urllib.request; urllib.request.urlopen('http://assay-tool.invalid/x')\""
                " || true\n")
    solve = src / "silent-fetch/solution/solve.sh"
    solve.write_text(solve.read_text().replace("echo", "command -v assay-tool || exit 127\necho", 1))
    suite = tmp_path / "suite"
    import_suite("harbor", src, suite)
    out = tmp_path / "audit"
    assert main(["audit", str(suite), "-o", str(out)]) == 1
    report = {t["task_id"]: t for t in json.loads((out / "audit.json").read_text())["tasks"]}
    assert report["good"]["label"] == "valid"
    need = report["silent-fetch"]
    assert need["label"] == "needs" and need["oracle"] == "fail", need
    [said] = [n for n in need["needs"] if "build" in n]
    assert "Dockerfile:5" in said and ("resolution" in said or "not known" in said), said


def test_a_python_313_task_is_audited_on_python_313(tmp_path: Path, image_store: ImageStore) -> None:
    """EvoEval task 4 of a real Terminal-Bench 1 collection (`tests/fixtures/import/terminal-bench-py313`,
    Apache-2.0): its reference sums floats with `sum()`, which Python 3.12 made compensated, and
    its image is the benchmark's `python-3-13`. Mapped to Debian bookworm's Python 3.11 it gave
    2.5499999999999994 for 2.55 and was labelled unsolvable as shipped; on trixie's 3.13 it is
    valid, and the mapping says which Python it is."""
    out = tmp_path / "suite"
    import_suite("terminal-bench", FIXTURES / "terminal-bench-py313", out)
    [task] = load_suite(out).tasks
    assert any("debian:trixie" in d and "Python is 3.13, as the image's" in d for d in task.spec.deviations), \
        task.spec.deviations
    audit = tmp_path / "audit"
    assert main(["audit", str(out), "-o", str(audit)]) == 0
    doc = json.loads((audit / "audit.json").read_text())
    assert [(t["task_id"], t["label"]) for t in doc["tasks"]] == [("evoeval-4", "valid")], doc["tasks"]


def test_official_terminal_bench_2_tasks_are_audited_offline(tmp_path: Path, image_store: ImageStore) -> None:
    """Two official Terminal-Bench 2.0 tasks (`tests/fixtures/import/terminal-bench-2`, Apache-2.0).
    Their test.sh spells the uv bootstrap `uvx -p 3.13 -w pytest==8.4.1 …`, which was read as a
    fetch of something else, so both ran it as shipped with no network and were labelled `needs`.
    Now it runs offline: cancel-async-tasks is valid, and log-summary-date-ranges `needs` the
    network for its reference solution (`apt-get install` under `set -e`), said as such. A third,
    extract-elf, installs gcc for its tests (below)."""
    out = tmp_path / "suite"
    report = import_suite("harbor", FIXTURES / "terminal-bench-2", out)
    for r in report.tasks:
        assert not [u for u in r.unmapped if "tests/test.sh" in u], r.unmapped
    audit = tmp_path / "audit"
    assert main(["audit", str(out), "-o", str(audit)]) == 1  # one task is not valid
    labels = {t["task_id"]: t for t in json.loads((audit / "audit.json").read_text())["tasks"]}
    assert labels["cancel-async-tasks"]["label"] == "valid", labels["cancel-async-tasks"]
    assert labels["log-summary-date-ranges"]["label"] == "needs", labels["log-summary-date-ranges"]
    assert any("solve.sh" in n for n in labels["log-summary-date-ranges"]["needs"])
    # extract-elf's test.sh installs gcc after the agent (`apt-get install -y curl gcc`): it ran as
    # shipped and was labelled `needs` before 2026-12-06; now gcc is in a verifier image over the
    # task's own, the oracle passes, nop fails, and one mutant (a.out left as given) survives
    elf = labels["extract-elf"]
    assert (elf["oracle"], elf["nop"], elf["label"]) == ("pass", "fail", "weak"), elf
    [r] = [t for t in report.tasks if t.id == "extract-elf"]
    assert any("Debian's gcc" in a and "for the verifier alone" in a for a in r.approximated), r.approximated


def test_packages_uvx_names_for_the_tests_are_installed_at_build_time(tmp_path: Path, image_store: ImageStore) -> None:
    """41 of the 88 official Terminal-Bench 2.0 tasks that import name more than pytest for their tests
    (`uvx -p 3.13 -w pytest==8.4.1 -w numpy==2.3.3 … pytest`), which uvx fetches at test time:
    with no network there the script ran as shipped and wrote reward 0. The importer now installs
    what uvx names into a venv of the image's python3 when the image is built (PyPI is reachable
    then), and the script's pytest runs from it: the oracle passes, the do-nothing agent fails."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "uvx-packages")
    task = src / "uvx-packages"
    script = (task / "tests/test.sh").read_text().replace(
        "  --with pytest==8.4.1 \\\n", "  -p 3.13 \\\n  -w pytest==8.4.1 \\\n  -w iniconfig==2.1.0 \\\n")
    assert "-w iniconfig==2.1.0" in script
    (task / "tests/test.sh").write_text(script)
    (task / "tests/test_state.py").write_text((task / "tests/test_state.py").read_text() + (
        "\n\ndef test_the_package_uvx_named_is_there():\n    import iniconfig\n    import pytest\n\n"
        "    assert pytest.__version__ == '8.4.1' and iniconfig.__file__.startswith('/opt/assay-verifier/')\n"))
    out = tmp_path / "suite"
    [r] = import_suite("harbor", src, out).tasks
    assert r.imported and not [u for u in r.unmapped if "test.sh" in u], r.unmapped
    assert any("/opt/assay-verifier" in a and "iniconfig==2.1.0" in a for a in r.approximated), r.approximated
    # in the verifier's image alone, over the task's own (before 2026-12-06: appended to the agent's Dockerfile)
    declared = yaml.safe_load((out / "tasks/uvx-packages/task.yaml").read_text())["verifier_environment"]
    assert declared["extends"] == "environment"
    assert any("/opt/assay-verifier/bin/pip install --no-cache-dir pytest==8.4.1 iniconfig==2.1.0" in s
               for s in declared["steps"]), declared
    assert (out / "tasks/uvx-packages/environment/Dockerfile").read_text() == (task / "environment/Dockerfile").read_text()
    run = tmp_path / "run"
    verdicts = oracle_and_nop(out, run)
    assert verdicts == {"oracle": "pass", "nop": "fail"}, verdicts


ROOT_TEST_SH = """#!/bin/bash
# Harbor runs this as root: the tests start a server under /server (headless-terminal's do)
mkdir -p /logs/verifier
if mkdir -p /server && cp /app/answer.txt /server/ && [ "$(cat /server/answer.txt)" = 42 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def test_a_verifier_refused_a_write_outside_the_workspace_needs_root_not_a_fix(tmp_path: Path,
                                                                               image_store: ImageStore) -> None:
    """Official Terminal-Bench 2.0 headless-terminal's tests `mkdir /server`; Harbor runs them as
    root, here the verifier is an unprivileged user over a read-only image, so its oracle failed on
    "mkdir: cannot create directory ‘/server’: Permission denied" and the audit blamed the task
    (`unsolvable as shipped`). It is what this machine cannot give: `needs` root, the line quoted.
    A task whose oracle fails for its own reason stays unsolvable, a pytest cache warning about
    the read-only /tests beside it or not."""
    src = tmp_path / "src"
    for name, solve in (("needs-root", "echo 42 > /app/answer.txt"), ("wrong", "echo 41 > /app/answer.txt")):
        shutil.copytree(FIXTURES / "harbor/simple-task", src / name)
        (src / name / "solution/solve.sh").write_text(f"#!/bin/bash\n{solve}\n")
    (src / "needs-root/tests/test.sh").write_text(ROOT_TEST_SH)
    (src / "wrong/tests/test.sh").write_text(ROOT_TEST_SH.replace("mkdir -p /server && cp /app/answer.txt /server/ "
                                                                  "&& [ \"$(cat /server/answer.txt)\" = 42 ]",
                                                                  "[ \"$(cat /app/answer.txt)\" = 42 ]")
                                              .replace("# Harbor", "echo 'PytestCacheWarning: could not create cache "
                                                       "path /tests/.pytest_cache: [Errno 30] Read-only file system: "
                                                       "'\"'\"'/tests/x'\"'\"''\n# Harbor"))
    suite = tmp_path / "suite"
    import_suite("harbor", src, suite)
    out = tmp_path / "audit"
    assert main(["audit", str(suite), "-o", str(out)]) == 1
    labels = {t["task_id"]: t for t in json.loads((out / "audit.json").read_text())["tasks"]}
    root = labels["needs-root"]
    assert root["label"] == "needs" and root["oracle"] == "fail", root
    assert any("root" in n and "/server" in n and "Permission denied" in n for n in root["needs"]), root["needs"]
    assert labels["wrong"]["label"] == "unsolvable as shipped", labels["wrong"]


def test_a_reference_solution_without_a_shebang_runs_with_bash_as_harbor_runs_it(tmp_path: Path,
                                                                                 image_store: ImageStore) -> None:
    """37 of the 89 official Terminal-Bench 2.0 solve.sh have no #! line (constraints-scheduling
    starts with `set -euo pipefail`). Harbor runs the script from bash, which runs such a file as
    bash; assay ran it with /bin/sh, where `set -o pipefail` is an illegal option, so the oracle
    failed and the task was labelled unsolvable as shipped. The imported copy now starts with
    #!/bin/bash, said (the source is never written); a test.sh without one the same."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "bare")
    bare = "# a comment first, as Terminal-Bench's canary\nset -euo pipefail\nif [[ -d /app ]]; then echo 'Hello, world!' > /app/hello.txt; fi\n"
    (src / "bare/solution/solve.sh").write_text(bare)
    test_sh = (src / "bare/tests/test.sh").read_text()
    (src / "bare/tests/test.sh").write_text(test_sh.removeprefix("#!/bin/bash\n"))
    suite = tmp_path / "suite"
    [r] = import_suite("harbor", src, suite).tasks
    assert (suite / "tasks/bare/solution/solve.sh").read_text() == "#!/bin/bash\n" + bare
    assert (suite / "tasks/bare/hidden/tests/test.sh").read_text().startswith("#!/bin/bash\n")
    assert (src / "bare/solution/solve.sh").read_text() == bare  # the source is never written
    assert any("solution/solve.sh has no #! line" in a for a in r.approximated), r.approximated
    assert any("tests/test.sh has no #! line" in a for a in r.approximated), r.approximated
    out = tmp_path / "audit"
    main(["audit", str(suite), "-o", str(out)])
    [label] = json.loads((out / "audit.json").read_text())["tasks"]
    assert (label["oracle"], label["nop"]) == ("pass", "fail"), label


def test_a_helper_the_reference_solution_wrote_and_the_task_never_asks_for_is_not_weakness(
        tmp_path: Path, image_store: ImageStore) -> None:
    """Official Terminal-Bench 2.0 solutions write helper scripts beside the answer (circuit-fibsqrt's
    soln.py, db-wal-recovery's decrypt_wal.py, distribution-search's search_distributions.py): the
    tests read the answer, never the helper, so deleting the helper "survived" and 5 of 13 audited
    tasks were labelled weak for it. A file whose every mutant survives, that the prompt never
    names, while a mutant of another output was caught, is the solution's own: shown, not counted.
    An output the prompt names stays weakness, and so does a task whose outputs are all unread."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "helper")
    (src / "helper/solution/solve.sh").write_text(
        "#!/bin/bash\ncat > /app/make_hello.py <<'EOF'\nopen('/app/hello.txt', 'w').write('Hello, world!\\n')\nEOF\n"
        "python3 /app/make_hello.py\n")
    shutil.copytree(src / "helper", src / "named")
    (src / "named/instruction.md").write_text((src / "named/instruction.md").read_text()
                                              + "\nKeep the script you used as /app/make_hello.py.\n")
    suite = tmp_path / "suite"
    import_suite("harbor", src, suite)
    out = tmp_path / "audit"
    main(["audit", str(suite), "-o", str(out)])
    labels = {t["task_id"]: t for t in json.loads((out / "audit.json").read_text())["tasks"]}
    helper = labels["helper"]
    assert helper["label"] == "valid", helper
    assert any("make_hello.py" in e and "not counted" in e for e in helper["evidence"]), helper["evidence"]
    named = labels["named"]
    assert named["label"] == "weak" and "delete make_hello.py" in named["mutants_survived"], named
