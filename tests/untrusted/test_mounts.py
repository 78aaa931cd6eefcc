"""Mounts under a folder about to be removed are found from mountinfo, whose mount points are
octal-escaped (a space is ``\\040``): a name with a space, a tab or a backslash must be found as
it is on disk, and detached, or a removal would delete through it."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest

from assay.untrusted.mounts import detach_under, mounts_under

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")

_libc = ctypes.CDLL(None, use_errno=True)
_MS_BIND = 4096


def _bind(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True)
    if _libc.mount(os.fsencode(src), os.fsencode(dst), None, _MS_BIND, None) != 0:
        pytest.skip(f"bind mount refused here: {os.strerror(ctypes.get_errno())}")


def test_escaped_mount_points_are_found_as_named_and_detached(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "fixture.txt").write_text("keep\n")
    top = tmp_path / "scratch"
    names = [top / "plain", top / "with space", top / "tab\there", top / "back\\slash" / "deeper"]
    for n in names:
        _bind(src, n)
    try:
        found = mounts_under(top)
        assert sorted(found) == sorted(os.fsencode(n) for n in names)
        assert found[0] == os.fsencode(names[-1])  # deepest first
        assert mounts_under(tmp_path / "src") == []  # a mount's source is not a mount under it
        assert detach_under(top) == len(names)
        assert mounts_under(top) == []
    finally:
        detach_under(top)
    assert (src / "fixture.txt").read_text() == "keep\n"
