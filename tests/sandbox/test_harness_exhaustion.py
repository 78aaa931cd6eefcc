"""The harness running out of its own resources while starting a command in the sandbox is the
harness's failure, never the agent's.

With the harness's descriptors exhausted (its RLIMIT_NOFILE reached, as on a host with many
runs), the exec's pipes could not be made: the attempt recorded "cannot start ['/bin/sh']", exit
127, and `open_files` among the limits the *agent* hit, so the agent failed its task. A program
missing inside the sandbox is still the command's own exit 127 (the launcher's, inside).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sandbox.walled import run_walled


#: one scenario for every backend: a missing program, then an exec with the harness's descriptors
#: used up (its own RLIMIT_NOFILE lowered to what it holds), then an exec once they are back
SCENARIO = """
import resource
from assay.sandbox.host import HostBackend
async def main():
    from assay.errors import SandboxError
    sb = await {backend}().create(SandboxSpec(workspace=Path({workspace!r}), network=NetworkProfile.none))
    out = {{}}
    try:
        out["missing"] = result_dict(await sb.exec(["/nonexistent-program"], timeout_s=30))
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")), hard))
        try:
            out["exhausted"] = result_dict(await sb.exec(["/bin/sh", "-c", "echo ran"], timeout_s=30))
        except SandboxError as e:
            out["exhausted"] = {{"refused": str(e), "reason": e.reason}}
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        out["after"] = result_dict(await sb.exec(["/bin/sh", "-c", "echo ran"], timeout_s=30))  # still usable
    finally:
        await sb.destroy()
    answer(out)
asyncio.run(main())
"""


@pytest.mark.usefixtures("bwrap_backend")
def test_descriptors_exhausted_in_the_harness_are_the_sandboxs_failure(tmp_path: Path) -> None:
    ans = run_walled(SCENARIO.format(backend="BwrapBackend", workspace=str(tmp_path)))
    assert ans["missing"]["exit_code"] == 127 and "nonexistent-program" in ans["missing"]["stderr"], ans
    assert ans["exhausted"].get("reason") == "sandbox_exec", ans
    assert "Too many open files" in ans["exhausted"]["refused"], ans
    assert ans["after"]["exit_code"] == 0 and ans["after"]["stdout"] == "ran\n", ans


def test_the_host_backend_says_the_same(tmp_path: Path) -> None:
    ans = run_walled(SCENARIO.format(backend="HostBackend", workspace=str(tmp_path)))
    assert ans["exhausted"].get("reason") == "sandbox_exec", ans
    assert ans["missing"]["exit_code"] == 127, ans  # the command's own: no such program
    assert ans["after"]["exit_code"] == 0, ans
