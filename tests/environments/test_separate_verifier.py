"""Harbor's separate verifier (``[verifier] environment_mode = "separate"``, or a
``[verifier.environment]`` table): the task's ``tests/`` folder is the verifier's own image
(``tests/Dockerfile``, built with ``tests/`` as its context, which must put ``/tests/test.sh`` in
place itself), so the verifier can hold what the agent's image never does (held-out answers, the
grader's dependencies). Imported before as if shared: ``tests/`` was mounted at ``/tests`` over the
agent's image, the verifier's image never built, and the oracle failed for want of the data only
that image holds, a task's packaging scored as the agent's failure.

Also ``network_mode`` (``public``, ``no-network``, ``allowlist``; the environment's baseline and the
agent's override), which was read as nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from assay.cli.main import main
from assay.environments.store import ImageStore
from assay.importers import import_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"

TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/answer.txt 2>/dev/null)" = "$(cat /tests/data/expected)" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""
VERIFIER_DOCKERFILE = """FROM ubuntu:24.04
WORKDIR /tests
RUN mkdir -p /tests/data && echo 4217 > /tests/data/expected
COPY test.sh /tests/test.sh
RUN chmod +x /tests/test.sh
"""


def separate_task(root: Path, *, toml_head: str = 'artifacts = ["/app/answer.txt"]\n',
                  verifier: str = '[verifier]\ntimeout_sec = 60.0\nenvironment_mode = "separate"\n',
                  environment: str = "[environment]\nbuild_timeout_sec = 600.0\n",
                  dockerfile: str | None = VERIFIER_DOCKERFILE) -> Path:
    """A task whose answer key (4217) is baked into the verifier's image only."""
    t = root / "key-in-verifier"
    (t / "environment").mkdir(parents=True)
    (t / "tests").mkdir()
    (t / "solution").mkdir()
    (t / "task.toml").write_text(f'version = "1.0"\n{toml_head}\n[agent]\ntimeout_sec = 60.0\n\n{verifier}\n{environment}')
    (t / "instruction.md").write_text("Write the number you find in the task's key into /app/answer.txt.\n")
    (t / "environment/Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\n")
    (t / "tests/test.sh").write_text(TEST_SH)
    if dockerfile is not None:
        (t / "tests/Dockerfile").write_text(dockerfile)
    (t / "solution/solve.sh").write_text("#!/bin/bash\necho 4217 > /app/answer.txt\n")
    return t


def _report(out: Path, tid: str = "key-in-verifier") -> dict:
    return {t["id"]: t for t in json.loads((out / "import-report.json").read_text())["tasks"]}[tid]


def test_the_verifier_image_is_built_from_tests_and_holds_what_the_agent_never_sees(tmp_path: Path,
                                                                                   image_store: ImageStore) -> None:
    separate_task(tmp_path / "src")
    suite = tmp_path / "suite"
    import_suite("harbor", tmp_path / "src", suite)
    task = yaml.safe_load((suite / "tasks/key-in-verifier/task.yaml").read_text())
    assert task["verifier_environment"]["dockerfile"] == "hidden/tests/Dockerfile"
    assert task["verifier_environment"]["context"] == "hidden/tests"
    [pred] = task["predicates"]
    assert pred["kind"] == "reward_file" and pred["tests"] is None  # /tests is the verifier image's own
    out = tmp_path / "run"
    assert main(["run", str(suite), "-a", "oracle,nop", "-q", "-o", str(out)]) == 0
    rows = [json.loads(p.read_text()) for p in out.glob("trials/*/attempts/*/result.json")]
    assert {r["agent"]: r["end_state"] for r in rows} == {"oracle": "pass", "nop": "fail"}, rows
    [rec] = json.loads((out / "manifest.json").read_text())["tasks"]
    agent_image, verifier_image = rec["environment"]["image"], rec["verifier_environment"]["image"]
    assert agent_image != verifier_image and verifier_image.startswith("key-in-verifier@sha256:")
    # the answer key is in the verifier's image only, never in the one the agent runs in
    agent_root = image_store.rootfs(agent_image.split("@")[1])
    verifier_root = image_store.rootfs(verifier_image.split("@")[1])
    assert (verifier_root / "tests/data/expected").read_text().strip() == "4217"
    assert not (agent_root / "tests").exists()
    assert main(["verify", str(out)]) == 0


def test_a_verifier_environment_table_alone_means_separate(tmp_path: Path) -> None:
    separate_task(tmp_path / "src", verifier="[verifier]\ntimeout_sec = 60.0\n\n[verifier.environment]\ncpus = 1\n")
    import_suite("harbor", tmp_path / "src", tmp_path / "suite")
    task = yaml.safe_load((tmp_path / "suite/tasks/key-in-verifier/task.yaml").read_text())
    assert task["verifier_environment"]["dockerfile"] == "hidden/tests/Dockerfile"
    assert any("verifier.environment" in a for a in _report(tmp_path / "suite")["approximated"])


@pytest.mark.parametrize(("change", "why"), [
    ({"dockerfile": None}, "tests/Dockerfile"),  # Harbor refuses a separate verifier with nothing to build
    ({"verifier": '[verifier]\nenvironment_mode = "shared"\n\n[verifier.environment]\ncpus = 1\n'}, "shared"),
    ({"verifier": '[verifier]\nenvironment_mode = "apart"\n'}, "environment_mode"),
])
def test_a_separate_verifier_harbor_itself_refuses_is_left_out_with_its_reason(tmp_path: Path, change: dict,
                                                                              why: str) -> None:
    separate_task(tmp_path / "src", **change)
    shutil.copytree(FIXTURES / "harbor/simple-task", tmp_path / "src/other")  # the import goes on without it
    import_suite("harbor", tmp_path / "src", tmp_path / "suite")
    rep = _report(tmp_path / "suite")
    assert not rep["imported"] and why in " ".join(rep["refused"]), rep


def test_an_artifact_outside_the_workspace_is_said_not_carried(tmp_path: Path) -> None:
    separate_task(tmp_path / "src", toml_head='artifacts = ["/tmp/answer.json", "/app/answer.txt"]\n')
    import_suite("harbor", tmp_path / "src", tmp_path / "suite")
    unmapped = " ".join(_report(tmp_path / "suite")["unmapped"])
    assert "/tmp/answer.json" in unmapped and "/app/answer.txt" not in unmapped


@pytest.mark.parametrize(("environment", "agent", "network", "said"), [
    ('network_mode = "no-network"', "", "none", None),
    ('network_mode = "public"', "", "harness", "allow_internet: true is read as network: harness"),
    ('network_mode = "public"', 'network_mode = "no-network"', "none", None),  # the agent's phase override wins
    ('network_mode = "allowlist"\nallowed_hosts = ["pypi.org"]', "", "harness", "pypi.org"),
])
def test_network_mode_is_read(tmp_path: Path, environment: str, agent: str, network: str, said: str | None) -> None:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "net")
    toml = (src / "net/task.toml").read_text()
    toml = toml.replace("[environment]\n", f"[environment]\n{environment}\n").replace(
        "[agent]\n", f"[agent]\n{agent}\n")
    (src / "net/task.toml").write_text(toml)
    import_suite("harbor", src, tmp_path / "suite")
    from assay.spec.load import load_suite

    [t] = load_suite(tmp_path / "suite").tasks
    assert t.spec.network is not None and t.spec.network.value == network
    rep = _report(tmp_path / "suite", "net")
    assert any("network_mode" in m for m in rep["mapped"]), rep
    if said is not None:
        assert said in " ".join([*t.spec.deviations, *rep["unmapped"], *rep["approximated"]]), (t.spec.deviations, rep)


@pytest.mark.parametrize(("task", "field"), [
    ("verifier_environment: {base: 'debian:bookworm'}\npredicates: [{id: p, kind: file_exists, path: x}]\n",
     "verifier_environment"),  # a verifier image needs the agent's own
    ("environment: {base: 'debian:bookworm'}\npredicates: [{id: p, kind: reward_file, tests: null}]\n",
     "predicates[0].tests"),  # the script from an image the task does not declare
    ("environment: {base: 'debian:bookworm'}\nverifier_environment: {dockerfile: hidden/nope/Dockerfile}\n"
     "predicates: [{id: p, kind: reward_file, tests: null}]\n", "verifier_environment.dockerfile"),
])
def test_a_verifier_image_the_loader_cannot_use_is_refused_naming_the_field(tmp_path: Path, task: str,
                                                                           field: str) -> None:
    from assay.errors import SpecError
    from assay.spec.load import load_suite

    suite = tmp_path / "suite"
    (suite / "tasks/t").mkdir(parents=True)
    (suite / "suite.yaml").write_text("name: s\nversion: '1'\ncategories: [{id: c}]\n")
    (suite / "tasks/t/task.yaml").write_text("category: c\n" + task)
    (suite / "tasks/t/prompt.md").write_text("do it\n")
    with pytest.raises(SpecError) as e:
        load_suite(suite)
    assert any(p.field == field and p.file.endswith("task.yaml") and p.fix for p in e.value.problems), e.value.problems


def test_a_task_toml_key_the_importer_does_not_read_is_named_never_dropped_silently(tmp_path: Path) -> None:
    """Harbor's task.toml grows (healthcheck, skills_dir, users, TPUs, Windows tasks...): a key the
    importer does not read is named in the report and the task's deviations; what cannot run here at
    all is refused."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "grown")
    with open(src / "grown/task.toml", "a") as f:
        f.write('skills_dir = "/skills"\nnew_knob = 3\nnothing = []\n\n[environment.healthcheck]\ncommand = "test -f /ready"\n')
    toml = (src / "grown/task.toml").read_text().replace("[agent]\n", '[agent]\nuser = "agent"\n')
    (src / "grown/task.toml").write_text(toml)
    for name, extra in (("windows", '\nos = "windows"\n'), ("tpu", "\ntpu = 4\n")):
        shutil.copytree(FIXTURES / "harbor/simple-task", src / name)
        t = (src / name / "task.toml").read_text()
        (src / name / "task.toml").write_text(t.replace("[environment]\n", "[environment]" + extra))
    import_suite("harbor", src, tmp_path / "suite")
    rep = _report(tmp_path / "suite", "grown")
    said = " ".join(rep["unmapped"])
    for key in ("environment.skills_dir", "environment.new_knob", "environment.healthcheck", "agent.user"):
        assert key in said, (key, said)
    assert "environment.nothing" not in said  # an empty value configures nothing
    from assay.spec.load import load_suite

    [t] = load_suite(tmp_path / "suite").tasks
    assert any("agent.user" in d for d in t.spec.deviations)
    assert "Windows" in " ".join(_report(tmp_path / "suite", "windows")["refused"])
    assert "tpu" in " ".join(_report(tmp_path / "suite", "tpu")["refused"])


@pytest.mark.parametrize(("given", "limits"), [
    ('memory = "2G"\nstorage = "10G"', {"memory_mb": 2048, "storage_mb": 10240}),  # a real task's older spelling
    ('memory = "512M"', {"memory_mb": 512}),
    ('memory = "4G"\nmemory_mb = 1024', {"memory_mb": 1024}),  # the newer field wins
])
def test_harbors_older_memory_and_storage_strings_are_limits(tmp_path: Path, given: str, limits: dict) -> None:
    """A fetched task (ATU531/mq-auto-restart) gives `memory = "2G"`, `storage = "10G"`: read as
    nothing before, so the task ran under assay's defaults with no word said."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "sized")
    toml = (src / "sized/task.toml").read_text()
    toml = toml.replace("memory_mb = 2048\nstorage_mb = 10240\n", given + "\n")
    (src / "sized/task.toml").write_text(toml)
    import_suite("harbor", src, tmp_path / "suite")
    task = yaml.safe_load((tmp_path / "suite/tasks/sized/task.yaml").read_text())
    assert {k: v for k, v in task["limits"].items() if k != "cpus"} == limits
    assert "not read" not in " ".join(_report(tmp_path / "suite", "sized")["unmapped"])


def test_a_bad_memory_string_leaves_the_task_out_naming_the_field(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "bad")
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "good")
    toml = (src / "bad/task.toml").read_text().replace("memory_mb = 2048\n", 'memory = "lots"\n')
    (src / "bad/task.toml").write_text(toml)
    import_suite("harbor", src, tmp_path / "suite")
    assert "environment.memory" in " ".join(_report(tmp_path / "suite", "bad")["refused"])


GRADER_DOCKERFILE = """FROM ubuntu:24.04
WORKDIR /app
RUN mkdir -p /app/grader && echo 4217 > /app/grader/expected
COPY grade.sh /app/grader/grade.sh
COPY test.sh /tests/test.sh
"""
GRADE_SH = """#!/bin/sh
[ "$(cat /app/answer.txt 2>/dev/null)" = "$(cat /app/grader/expected)" ]
"""
GRADED_TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
if sh /app/grader/grade.sh; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


@pytest.mark.parametrize("forge", [
    # the agent's own grader where the verifier image keeps its own
    "mkdir -p /app/grader && printf '#!/bin/sh\\nexit 0\\n' > /app/grader/grade.sh",
    # or a link where the grader's folder is, into something it controls
    "mkdir -p /app/mine && printf 'exit 0\\n' > /app/mine/grade.sh && ln -s /app/mine /app/grader",
])
def test_the_verifier_images_own_files_at_the_workdir_are_never_the_agents(tmp_path: Path, image_store: ImageStore,
                                                                          forge: str) -> None:
    """The workspace is seen at the agent's workdir in the verifier's sandbox too. A verifier image
    that keeps its grader under that folder must run its own grader, not one the agent wrote at
    the same path: the image's files there are laid over the snapshot (in Harbor, the agent's files
    reach a separate verifier only as declared artifacts). Here the 'agent' is a forged solution:
    it never writes the answer, only a grader that passes."""
    t = separate_task(tmp_path / "src", dockerfile=GRADER_DOCKERFILE)
    (t / "tests/grade.sh").write_text(GRADE_SH)
    (t / "tests/test.sh").write_text(GRADED_TEST_SH)
    (t / "solution/solve.sh").write_text(f"#!/bin/bash\n{forge}\n")
    suite = tmp_path / "suite"
    import_suite("harbor", tmp_path / "src", suite)
    out = tmp_path / "run"
    assert main(["run", str(suite), "-a", "oracle", "-q", "-o", str(out)]) == 0
    [row] = [json.loads(p.read_text()) for p in out.glob("trials/*/attempts/*/result.json")]
    assert row["end_state"] == "fail", row["predicates"]
    # and the honest answer still passes with the image's grader
    (t / "solution/solve.sh").write_text("#!/bin/bash\necho 4217 > /app/answer.txt\n")
    shutil.rmtree(suite)
    import_suite("harbor", tmp_path / "src", suite)
    assert main(["run", str(suite), "-a", "oracle", "-q", "-o", str(tmp_path / "run2")]) == 0
    [row] = [json.loads(p.read_text()) for p in (tmp_path / "run2").glob("trials/*/attempts/*/result.json")]
    assert row["end_state"] == "pass", row["predicates"]
