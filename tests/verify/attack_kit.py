"""A hostile agent, end to end: a command agent writes attack files into its workspace, the
trial runs in the default bubblewrap sandbox, and the verifier judges it. The whole run sits in
its own pid namespace (the second wall), and its attempt result comes back as JSON."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from assay.sandbox.bwrap.backend import BwrapBackend
from tests.conftest import write_agent, write_suite, write_task
from tests.sandbox.walled import run_walled

CALC_TEST = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_add_neg():\n    assert add(-1, 1) == 0\n"
WRONG_CALC = "def add(a, b):\n    return a - b\n"


def need_bwrap() -> None:
    status = BwrapBackend().status()
    if not status.usable:
        pytest.skip(f"bubblewrap cannot sandbox here: {status.detail}")


def run_hostile(tmp_path: Path, files: dict[str, str], predicates: list[dict[str, Any]], *,
                hidden: dict[str, str] | None = None, verify: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one trial of a command agent that writes ``files`` (attack payloads) into the workspace."""
    need_bwrap()
    suite = write_suite(tmp_path / "suite")
    write_task(suite, "calc", task={"category": "code", "budget": {"wall_time_s": 60}, "predicates": predicates},
               workspace={"calc.py": WRONG_CALC}, hidden=hidden or {"tests/test_calc.py": CALC_TEST}, verify=verify)
    payload = {k: textwrap.dedent(v) for k, v in files.items()}
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir(mode=0o755)
    agent_dir.chmod(0o755)  # the sandbox's own uid must read the agent script
    agent = write_agent(agent_dir / "hostile.yaml", "hostile", f"""
        import json, os
        for rel, text in json.loads({json.dumps(json.dumps(payload))}).items():
            os.makedirs(os.path.dirname(rel) or ".", exist_ok=True)
            open(rel, "w").write(text)
    """)
    out = tmp_path / "run"
    ans = run_walled(f"""
        from assay.run import RunOptions, start_run
        res = start_run(RunOptions(suite=Path({str(suite)!r}), agents=[{str(agent)!r}], out=Path({str(out)!r}),
                                   sandbox="bwrap", max_retries=0))
        answer([r.model_dump(mode="json") for r in res.results])
    """, timeout=240)
    [result] = ans
    return result


def incident_types(result: dict[str, Any]) -> set[str]:
    return {i["type"] for i in result["incidents"]}
