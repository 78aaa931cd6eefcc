"""A final workspace shipped to a verifier node is the very tree the local verifier would copy,
and a pack that was tampered with on the way is refused, never written through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assay.verify.shipped import DIR, FILE, LINK, ShippedTree, ShippedTreeError, pack_tree, unpack_tree
from assay.verify.snapshot import copy_snapshot


def hostile_tree(root: Path) -> Path:
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "src" / "deep" / "x.bin").write_bytes(bytes(range(256)) * 10)
    (root / "empty").mkdir()
    os.symlink("/etc/passwd", root / "out-link")
    os.symlink("loop", root / "loop")
    os.symlink("src/main.py", root / "in-link")
    os.mkfifo(root / "pipe")
    (root / os.fsdecode(b"caf\xe9-\xff.txt")).write_bytes(b"latin-1 name")
    with open(root / "sparse", "wb") as f:
        f.seek(1 << 20)
        f.write(b"end")
    d = root
    for i in range(70):  # past the walk's depth bound: named as skipped by both
        d = d / f"d{i}"
    d.mkdir(parents=True)
    return root


def as_seen(root: Path) -> dict[bytes, tuple[str, bytes]]:
    out = {}
    base = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, base)
            if os.path.islink(full):
                out[rel] = ("link", os.readlink(full))
            elif os.path.isdir(full):
                out[rel] = ("dir", b"")
            else:
                with open(full, "rb") as f:
                    out[rel] = ("file", f.read())
    return out


def test_shipped_tree_equals_the_local_copy(tmp_path: Path) -> None:
    src = hostile_tree(tmp_path / "ws")
    skipped_local = copy_snapshot(src, tmp_path / "local")
    tree = pack_tree(src, max_bytes=1 << 30)
    skipped_shipped = unpack_tree(tree, tmp_path / "shipped", max_bytes=1 << 30)
    assert as_seen(tmp_path / "local") == as_seen(tmp_path / "shipped")
    assert sorted(skipped_local) == sorted(skipped_shipped)
    assert "pipe" in skipped_shipped
    assert os.readlink(tmp_path / "shipped" / "out-link") == "/etc/passwd"  # a link stays a link, not followed
    assert (tmp_path / "shipped" / "sparse").stat().st_size == (1 << 20) + 3


def test_pack_is_bounded_in_bytes(tmp_path: Path) -> None:
    src = tmp_path / "ws"
    src.mkdir()
    (src / "big").write_bytes(b"x" * 5000)
    with pytest.raises(ShippedTreeError, match="more than 4096 bytes"):
        pack_tree(src, max_bytes=4096)


@pytest.mark.parametrize("entries, words", [
    (((b"../escape", FILE, b"x"),), "not a plain relative path"),
    (((b"/etc/owned", FILE, b"x"),), "not a plain relative path"),
    (((b"a/./b", FILE, b"x"),), "not a plain relative path"),
    (((b"link", LINK, b"/tmp"), (b"link/through", FILE, b"x")), "not under a folder"),
    (((b"f", FILE, b""), (b"f/inside", FILE, b"x")), "not under a folder"),
    (((b"missing/child", FILE, b"x"),), "not under a folder"),
    (((b"twice", FILE, b"1"), (b"twice", FILE, b"2")), "given twice"),
    (((b"odd", "p", b""),), "unknown kind"),
])
def test_a_tampered_pack_is_refused_and_nothing_escapes(tmp_path: Path, entries, words: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    with pytest.raises(ShippedTreeError, match=words):
        unpack_tree(ShippedTree(entries), tmp_path / "dst", max_bytes=1 << 20)
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "escape").exists()


def test_unpack_refuses_an_oversized_pack(tmp_path: Path) -> None:
    with pytest.raises(ShippedTreeError, match="over the bound"):
        unpack_tree(ShippedTree(((b"a", FILE, b"x" * 100), (b"d", DIR, b""))), tmp_path / "dst", max_bytes=10)


def test_a_verifier_node_calls_a_tampered_pack_an_infra_error_not_a_verdict(tmp_path: Path) -> None:
    import asyncio

    from assay.errors import VerifierError
    from assay.sandbox.registry import get_backend
    from assay.spec.budget import Limits
    from assay.spec.load import load_suite
    from assay.verify.remote import VerifierNode, VerifyRequest
    from tests.conftest import ROOT

    suite = load_suite(ROOT / "examples" / "starter")
    node = VerifierNode(suite, get_backend("bwrap"), "node-x", root=tmp_path / "v")
    task = suite.tasks[0].id if isinstance(suite.tasks, list) else next(iter(suite.tasks))
    req = VerifyRequest(trial_id="t", attempt=1, task_id=task, initial_digests={}, events=(), limits=Limits(),
                        tree=ShippedTree(((b"../../escape", FILE, b"x"),)))
    with pytest.raises(VerifierError) as caught:
        asyncio.run(node.verify(req, max_bytes=1 << 20))
    assert caught.value.reason == "verifier_transfer"
    assert not (tmp_path / "escape").exists() and list((tmp_path / "v").iterdir()) == []
