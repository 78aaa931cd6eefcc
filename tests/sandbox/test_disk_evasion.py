"""The workspace's disk bound is measured by walking the workspace; an agent that writes where a
name-based walk cannot reach (past PATH_MAX, or deeper than the walker goes) must not escape it:
what cannot be measured counts as over the bound (unknown is failure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_agent, write_suite, write_task

pytestmark = [pytest.mark.usefixtures("bwrap_backend"), pytest.mark.slow]

HIDE_DEEP = """
    import os
    cur = os.open(".", os.O_RDONLY)
    for _ in range(24):  # 24 x 200-byte names: 4,800 bytes, past PATH_MAX from the workspace
        os.mkdir("d" * 200, dir_fd=cur)
        nxt = os.open("d" * 200, os.O_RDONLY, dir_fd=cur)
        os.close(cur)
        cur = nxt
    fd = os.open("fill", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=cur)
    for _ in range(48):
        os.write(fd, os.urandom(1 << 20))
    os.close(fd)
    open("answer.txt", "w").write("42")
"""
HONEST = """
    open("answer.txt", "w").write("42")
"""


def test_data_hidden_past_path_max_still_hits_the_disk_bound(tmp_path: Path) -> None:
    from assay.run import RunOptions, start_run
    from assay.untrusted.tree import remove_untrusted

    suite = write_suite(tmp_path / "suite")
    write_task(suite, "answer", task={"category": "code", "budget": {"wall_time_s": 60}, "limits": {"disk_mb": 32},
                                      "predicates": [{"id": "answer", "kind": "command",
                                                      "cmd": "test \"$(cat answer.txt)\" = 42"}]})
    agents = tmp_path / "agents"
    agents.mkdir()
    paths = [str(write_agent(agents / "hide.yaml", "hide", HIDE_DEEP)),
             str(write_agent(agents / "honest.yaml", "honest", HONEST))]
    try:
        out = start_run(RunOptions(suite=suite, agents=paths, out=tmp_path / "run", sandbox="bwrap", max_retries=0))
    finally:
        remove_untrusted(tmp_path / "run")
    by = {r.agent: r for r in out.results}
    assert (by["hide"].end_state.value, by["hide"].reason) == ("fail", "resource_limit: disk"), by["hide"]
    assert by["honest"].end_state.value == "pass"
