"""The idmapped workspace clone takes one user namespace per process and mapping (it forked for
each attempt before): the namespace must be made once, and a clone must still show the fixture
as the owner its own mapping names, never another mapping's, also when mappings alternate."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assay.sandbox import mountapi

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="idmapped mounts need root")


def _clone_owner(src: Path, dst: Path, host_uid: int) -> int:
    dst.mkdir()
    mountapi.idmapped_clone(src, dst, disk_uid=os.getuid(), disk_gid=os.getgid(), host_uid=host_uid)
    try:
        return (dst / "f.txt").stat().st_uid
    finally:
        mountapi.umount(dst, detach=True)


def test_one_namespace_per_mapping_and_each_clone_shows_its_own_owner(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "fixture"
    src.mkdir()
    (src / "f.txt").write_text("fixture\n")
    made: list[tuple[int, int, int]] = []
    real = mountapi.userns_fd

    def counted(disk_uid: int, disk_gid: int, host_uid: int) -> int:
        made.append((disk_uid, disk_gid, host_uid))
        return real(disk_uid, disk_gid, host_uid)

    monkeypatch.setattr(mountapi, "userns_fd", counted)
    monkeypatch.setattr(mountapi, "_SHARED", {})
    owners = [_clone_owner(src, tmp_path / f"c{i}", uid) for i, uid in enumerate((61001, 61002, 61001, 61002))]
    assert owners == [61001, 61002, 61001, 61002]
    assert sorted(made) == [(os.getuid(), os.getgid(), 61001), (os.getuid(), os.getgid(), 61002)]
    assert (src / "f.txt").stat().st_uid == os.getuid()  # the fixture itself is unchanged


def test_a_forked_child_makes_its_own_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "fixture"
    src.mkdir()
    (src / "f.txt").write_text("fixture\n")
    monkeypatch.setattr(mountapi, "_SHARED", {})
    assert _clone_owner(src, tmp_path / "parent", 61003) == 61003
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 1
        try:
            fresh = mountapi.shared_userns_fd(os.getuid(), os.getgid(), 61003)
            inherited = mountapi._SHARED.get((os.getppid(), os.getuid(), os.getgid(), 61003))
            os.write(w, b"ok" if fresh != inherited and _clone_owner(src, tmp_path / "child", 61003) == 61003
                     else b"no")
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    got = os.read(r, 2)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and got == b"ok"
