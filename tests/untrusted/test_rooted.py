"""Paths resolved inside a root as its own system would: what the builder, the seal, the
workspace seeding and the verifier read of a task's image or build context (all written by the
task's author, a third party), never the host's files through a link there."""

from __future__ import annotations

import os
from pathlib import Path

from assay.untrusted.rooted import matches, resolve_in


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "shadow").write_text("the image's own\n")
    (root / "srv" / "real").mkdir(parents=True)
    (root / "srv" / "real" / "f.txt").write_text("f\n")
    os.symlink("/etc/shadow", root / "abs-link")  # absolute: the root's /etc/shadow
    os.symlink("../../..", root / "srv" / "up")  # climbs past the root: stops at it
    os.symlink("/srv/real", root / "data")
    os.symlink("loop-b", root / "loop-a")
    os.symlink("loop-a", root / "loop-b")
    os.symlink(str(tmp_path / "host"), root / "to-host")  # a host path: not in the root
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "secret.txt").write_text("host\n")
    return root


def test_links_resolve_inside_the_root(tmp_path: Path) -> None:
    root = _root(tmp_path)
    assert resolve_in(root, "/abs-link") == root / "etc" / "shadow"
    assert resolve_in(root, "/srv/up/etc/shadow") == root / "etc" / "shadow"
    assert resolve_in(root, "../../etc/shadow") == root / "etc" / "shadow"
    assert resolve_in(root, "/data/f.txt") == root / "srv" / "real" / "f.txt"
    assert resolve_in(root, "/") == root


def test_what_is_not_in_the_root_is_none(tmp_path: Path) -> None:
    root = _root(tmp_path)
    assert resolve_in(root, "/to-host/secret.txt") is None  # the host's file is never reached
    assert resolve_in(root, "/loop-a") is None
    assert resolve_in(root, "/missing") is None


def test_globs_match_in_the_last_part_only_inside_the_root(tmp_path: Path) -> None:
    root = _root(tmp_path)
    (root / "srv" / "real" / "g.txt").write_text("g\n")
    assert matches(root, "/data/*.txt") == [root / "srv" / "real" / "f.txt", root / "srv" / "real" / "g.txt"]
    assert matches(root, "/to-host/*") == []
