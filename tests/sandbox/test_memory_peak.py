"""The sandbox's memory high-water mark, from its control group: what a per-turn memory figure
(``assay perf``) reads. Reset before an exec, it holds that exec's peak and no earlier one's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assay.sandbox.base import SandboxSpec
from assay.sandbox.bwrap import cgroup

pytestmark = pytest.mark.usefixtures("bwrap_backend")

HOLD = "b = bytearray({mib} << 20); b[::4096] = b'x' * len(b[::4096])"


def test_the_peak_is_the_exec_s_own_after_a_reset(bwrap_backend, tmp_path: Path) -> None:
    if cgroup.layout() is None:
        pytest.skip("no delegated control group here: the peak is not measured")

    async def go() -> tuple[int | None, int | None, bool]:
        sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path))
        try:
            assert sb.reset_memory_peak()
            await sb.exec(["python3", "-c", HOLD.format(mib=64)], timeout_s=60)
            big = sb.memory_peak_bytes()
            again = sb.reset_memory_peak()
            await sb.exec(["python3", "-c", HOLD.format(mib=1)], timeout_s=60)
            return big, sb.memory_peak_bytes(), again
        finally:
            await sb.destroy()

    big, small, reset = asyncio.run(go())
    assert reset and big is not None and small is not None
    assert big >= 64 << 20, big
    assert small < big - (48 << 20), (small, big)  # the 64 MiB exec is not in the second peak


def test_a_backend_without_a_group_says_not_measured(tmp_path: Path) -> None:
    from assay.sandbox.registry import get_backend

    async def go() -> tuple[int | None, bool]:
        sb = await get_backend("host").create(SandboxSpec(workspace=tmp_path))
        try:
            return sb.memory_peak_bytes(), sb.reset_memory_peak()
        finally:
            await sb.destroy()

    assert asyncio.run(go()) == (None, False)
