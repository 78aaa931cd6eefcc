"""Law 8 for the product agents' own session files: a secret that reached the agent's session
(here through its prompt) is kept only redacted. The raw files the adapters read back from the
agent home never land in the run directory; only their redacted artifacts do."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.agents.products import PRODUCTS, install
from assay.run import RunOptions, start_run
from tests.agents.products.test_e2e import _missing
from tests.conftest import write_suite, write_task

pytestmark = [pytest.mark.agents, pytest.mark.slow]

CANARY = "AKIAQ7ZC4NARYXSECRET"  # an AWS key shape the redactor knows
AGENTS = [a for a in ("pi", "hermes") if a in PRODUCTS.builtin_names()]


@pytest.mark.parametrize("agent", AGENTS)
def test_a_secret_in_the_agents_session_never_lands_raw_in_the_run_directory(agent: str, tmp_path: Path) -> None:
    why = _missing()
    if why:
        pytest.skip(why)
    if install.find(agent) is None:
        pytest.skip(f"{agent} is not installed (scripts/install-agents.sh)")
    suite = write_suite(tmp_path / "suite")
    write_task(suite, "echo-key", task={"category": "code", "model_script": "model.yaml",
                                        "budget": {"wall_time_s": 180},
                                        "predicates": [{"id": "noted", "kind": "file_exists", "path": "note.txt"}]},
               prompt=f"The deploy key is {CANARY}. Say that you have seen it.",
               files={"model.yaml": "turns:\n  - text: \"I have seen the key.\"\n"})
    out = start_run(RunOptions(suite=suite, agents=[agent], model="scripted", sandbox="bwrap", out=tmp_path / "run"))
    [r] = out.results
    native = [name for name in r.artifacts if name.startswith("native.")]
    assert native, f"{agent} kept no session file: the test would prove nothing ({r.end_state}, {r.errors})"
    leaked = [p for p in (tmp_path / "run").rglob("*") if p.is_file() and CANARY.encode() in p.read_bytes()]
    assert leaked == []
