"""What a test script installs before its tests is the verifier's alone.

22 of the 89 official Terminal-Bench 2.0 tasks install more than the uv bootstrap in
``tests/test.sh``, after the agent has finished: ``apt-get install -y curl gcc`` (extract-elf),
``curl primer3`` (dna-assembly), ``pip install pytest==8.4.1 …`` into the image's Python. With no
network at test time those scripts ran as shipped and wrote reward 0 whatever the agent did. The
packages cannot go into the agent's image either: the agent of dna-assembly would then have the
very primer tool the task is about. The importer now declares a verifier image over the task's
own (``verifier_environment: {extends: environment}``), built once, holding what the script
installs; the agent's image is the task's as shipped.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from assay.environments.runtime import image_root, plan_of
from assay.environments.store import ImageStore
from assay.errors import SpecError
from assay.importers import import_suite
from assay.importers.harbor_offline import offline_plan
from assay.spec.environment import EnvironmentSpec
from assay.spec.load import load_suite
from tests.environments.conftest import oracle_and_nop

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"

#: the stock Terminal-Bench 2.0 script of a task whose tests need a tool the agent's image lacks:
#: extract-elf's own (a shipped fixture), installing bc where it installs gcc
TEST_SH = (FIXTURES / "terminal-bench-2/extract-elf/tests/test.sh").read_text().replace("curl gcc", "curl bc")
assert "apt-get install -y curl bc" in TEST_SH
TESTS = """import subprocess
from pathlib import Path


def test_the_answer_is_what_bc_computes():
    want = subprocess.run(["bc"], input="6*7\\n", capture_output=True, text=True, check=True).stdout.strip()
    assert Path("/app/answer.txt").read_text().strip() == want


def test_the_agents_edit_of_the_image_file_is_what_is_verified():
    assert Path("/app/input.txt").read_text().strip() == "seed edited"
"""


def bc_task(root: Path) -> Path:
    t = root / "needs-bc"
    for d in ("environment", "tests", "solution"):
        (t / d).mkdir(parents=True)
    (t / "task.toml").write_text('version = "1.0"\n\n[verifier]\ntimeout_sec = 120.0\n\n[agent]\ntimeout_sec = 60.0\n')
    (t / "instruction.md").write_text("Write six times seven into /app/answer.txt and append ' edited' to the "
                                      "line of /app/input.txt.\n")
    (t / "environment/Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\nRUN echo seed > /app/input.txt\n")
    (t / "tests/test.sh").write_text(TEST_SH)
    (t / "tests/test_outputs.py").write_text(TESTS)
    (t / "solution/solve.sh").write_text("#!/bin/bash\necho 42 > /app/answer.txt\necho 'seed edited' > /app/input.txt\n")
    return t


def test_what_the_script_installs_becomes_the_verifiers_steps() -> None:
    plan = offline_plan(TEST_SH)
    assert plan is not None
    assert plan.apt == ("bc",) and plan.pip == () and plan.venv == ()
    code = "\n".join(line.split("#", 1)[0] for line in plan.script.splitlines())
    for gone in ("apt-get", "curl", "uvx"):
        assert gone not in code, (gone, plan.script)
    assert "python3 -I -m pytest" in plan.script


@pytest.mark.parametrize(("line", "apt", "pip"), [
    ("apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y expect curl", ("expect",), ()),
    ("apt-get update -qq && apt-get install -y mtools socat", ("mtools", "socat"), ()),
    ("apt-get install -y curl python3-pillow", ("python3-pillow",), ()),
    ("pip install pytest==8.4.1 pytest-json-ctrf==0.3.5", (), ("pytest==8.4.1", "pytest-json-ctrf==0.3.5")),
    ("pip install pytest==8.4.1 pytest-json-ctrf==0.3.5 --break-system-packages", (),
     ("pytest==8.4.1", "pytest-json-ctrf==0.3.5")),
    ("python3 -m pip install -q requests==2.32.5", (), ("requests==2.32.5",)),
])
def test_each_spelling_of_an_install_is_read(line: str, apt: tuple[str, ...], pip: tuple[str, ...]) -> None:
    plan = offline_plan(f"#!/bin/bash\n{line}\npytest /tests/test_outputs.py -rA\n")
    assert plan is not None, line
    assert (plan.apt, plan.pip) == (apt, pip)
    assert "install" not in plan.script


@pytest.mark.parametrize("line", [
    "pip install -r /tests/requirements.txt",  # a file the importer does not read
    "pip install git+https://github.com/x/y",  # a URL
    "pip install --index-url https://example.org/simple thing",
    "apt-get install -y curl ./local.deb",
    "apt-get install -y $PKGS",
    "apt-get update && curl -L -o w.pt https://example.org/w.pt",  # a download beside apt
])
def test_an_install_it_cannot_move_leaves_the_script_as_shipped(line: str) -> None:
    assert offline_plan(f"#!/bin/bash\n{line}\npytest /tests/test_outputs.py\n") is None, line


def test_extends_is_the_verifiers_alone_and_takes_no_base(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="takes no `base` or `dockerfile`"):
        EnvironmentSpec(extends="environment", base="debian:bookworm")
    t = tmp_path / "suite" / "tasks" / "t"
    t.mkdir(parents=True)
    (tmp_path / "suite" / "suite.yaml").write_text('name: s\nversion: "1"\ncategories: [{id: code, weight: 1}]\n')
    (t / "prompt.md").write_text("p\n")
    (t / "task.yaml").write_text("category: code\nenvironment: {extends: environment, packages: [bc]}\n"
                                 "predicates: [{id: f, kind: file_exists, path: x}]\n")
    with pytest.raises(SpecError) as e:
        load_suite(tmp_path / "suite")
    assert "environment.extends" in str(e.value) and "verifier_environment" in str(e.value)


def test_a_verifier_image_over_the_tasks_holds_what_the_agents_never_does(tmp_path: Path,
                                                                           image_store: ImageStore) -> None:
    bc_task(tmp_path / "src")
    out = tmp_path / "suite"
    [r] = import_suite("harbor", tmp_path / "src", out).tasks
    assert r.imported and not [u for u in r.unmapped if "test.sh" in u], r.unmapped
    assert any("bc" in a and "verifier" in a for a in r.approximated), r.approximated
    task = yaml.safe_load((out / "tasks/needs-bc/task.yaml").read_text())
    assert task["verifier_environment"]["extends"] == "environment"
    assert (out / "tasks/needs-bc/environment/Dockerfile").read_text() == \
        (tmp_path / "src/needs-bc/environment/Dockerfile").read_text()  # the agent's image as shipped
    run = tmp_path / "run"
    verdicts = oracle_and_nop(out, run)
    assert verdicts == {"oracle": "pass", "nop": "fail"}, verdicts
    loaded = load_suite(out).tasks[0]
    agent, verifier = image_root(loaded, image_store), image_root(loaded, image_store, verifier=True)
    assert verifier is not None and agent is not None and agent.digest != verifier.digest
    assert (verifier.rootfs / "usr/bin/bc").exists() and not (agent.rootfs / "usr/bin/bc").exists()
    assert plan_of(loaded, verifier=True).parent.digest == agent.digest  # type: ignore[union-attr]
    [rec] = json.loads((run / "manifest.json").read_text())["tasks"]
    assert rec["verifier_environment"]["image"].endswith(verifier.digest)
    shutil.rmtree(run)


def test_uvx_reading_another_index_installs_from_it_beside_pypi() -> None:
    """Official Terminal-Bench 2.0 pytorch-model-cli's tests take torch from PyTorch's CPU index
    (`uvx --index https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match -w
    torch==2.7.1 …`): pip reads it beside PyPI for the verifier's venv (every index, the best
    version: uv's unsafe-best-match). An index named by a variable or over plain HTTP is not read."""
    script = ("#!/bin/bash\napt-get update\napt-get install -y curl ffmpeg\n"
              "curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh\nsource $HOME/.local/bin/env\n"
              "uvx \\\n  --index https://download.pytorch.org/whl/cpu \\\n  --index-strategy unsafe-best-match \\\n"
              "  -p 3.13 \\\n  -w torch==2.7.1 \\\n  -w pytest==8.4.1 \\\n"
              "  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -v -rA\n")
    plan = offline_plan(script)
    assert plan is not None
    assert plan.indexes == ("https://download.pytorch.org/whl/cpu",) and plan.venv == ("torch==2.7.1", "pytest==8.4.1")
    assert plan.apt == ("ffmpeg",)
    assert any("--extra-index-url https://download.pytorch.org/whl/cpu torch==2.7.1" in s for s in plan.verifier_steps)
    assert "/opt/assay-verifier/bin/python -I -m pytest" in plan.script and "--index" not in plan.script
    for other in ("--index $INDEX", "--index http://example.org/simple"):
        assert offline_plan(script.replace("--index https://download.pytorch.org/whl/cpu", other)) is None, other
