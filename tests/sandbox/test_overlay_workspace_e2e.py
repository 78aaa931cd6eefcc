"""The overlay workspace attacked from inside a real bwrap sandbox: the agent deletes, renames
and rewrites the shared fixture's files, plants a whiteout and links out of the tree, tries a
device node. The fixture must stay byte-for-byte and owner-for-owner as it was; what the host
walks afterwards (the diff's and the verifier's one walk) must be exactly what the sandbox saw;
another identity over the same workspace (the verifier's uid) must see the same merged state;
a second attempt over the fixture starts clean."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from assay.run import workspace as ws
from assay.run.workspace_delta import delta_scan
from assay.sandbox import overlay_ws
from assay.sandbox.base import SandboxSpec
from assay.sandbox.bwrap.backend import BwrapBackend
from assay.spec.digest import tree_digests

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="an overlay workspace needs root (else it is a copy)")

ATTACK = r"""
import json, os, stat
out = {}
def tryit(name, fn):
    try:
        fn(); out[name] = "ok"
    except OSError as e:
        out[name] = e.strerror
tryit("append", lambda: open("a.txt", "a").write("agent\n"))
tryit("delete", lambda: os.remove("sub/b.txt"))
tryit("rename_file", lambda: os.rename("c.txt", "c2.txt"))
tryit("rename_dir", lambda: os.rename("deep", "deep2"))
tryit("whiteout", lambda: os.mknod("keep.txt.wh", stat.S_IFCHR | 0o600, 0))
tryit("whiteout_over_lower", lambda: (os.remove("keep.txt"), os.mknod("keep.txt", stat.S_IFCHR | 0o600, 0)))
tryit("device", lambda: os.mknod("null", stat.S_IFCHR | 0o666, os.makedev(1, 3)))
tryit("link_out", lambda: os.symlink("/etc/passwd", "passwd"))
tryit("link_up", lambda: os.symlink("../../../..", "up"))
tryit("chmod", lambda: os.chmod("run.sh", 0o700))
seen = []
for root, dirs, files in os.walk("."):
    for n in dirs + files:
        full = os.path.join(root, n)
        if os.path.islink(full) or not os.path.isdir(full):  # what the walk's digests list
            seen.append(os.path.relpath(full, "."))
out["seen"] = sorted(seen)
out["a"] = open("a.txt").read()
print(json.dumps(out))
"""


def fixture(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "deep" / "er").mkdir(parents=True)
    (root / "a.txt").write_text("fixture\n")
    (root / "sub" / "b.txt").write_text("b\n")
    (root / "c.txt").write_text("c\n")
    (root / "keep.txt").write_text("keep\n")
    (root / "deep" / "er" / "d.txt").write_text("d\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    return root


def owners(root: Path) -> dict[str, tuple[int, int, int]]:
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for n in dirs + files:
            st = os.lstat(os.path.join(dirpath, n))
            out[os.path.relpath(os.path.join(dirpath, n), root)] = (st.st_uid, st.st_gid, st.st_mode)
    return out


@pytest.fixture
def overlay_mode(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ASSAY_WORKSPACE", "overlay")  # a refusal is an error here, never a silent copy
    yield
    for target in list(overlay_ws._LIVE):
        overlay_ws.release(Path(target))


async def _run(backend: BwrapBackend, live: Path, identity: str, code: str) -> dict:
    sb = await backend.create(SandboxSpec(workspace=live, identity=identity))
    try:
        r = await sb.exec([sys.executable, "-I", "-c", code], timeout_s=60)
    finally:
        await sb.destroy()
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


async def test_the_agent_cannot_touch_the_fixture_and_the_host_sees_its_merged_view(
        bwrap_backend: BwrapBackend, tmp_path: Path, overlay_mode: None) -> None:
    fx = fixture(tmp_path / "fx")
    before, before_owners = tree_digests(fx), owners(fx)
    live = tmp_path / "attempt1" / "workspace"
    assert ws.make_workspace(fx, live, ["logs"]) is True
    got = await _run(bwrap_backend, live, "agent", ATTACK)
    assert got["append"] == got["delete"] == got["rename_file"] == got["rename_dir"] == "ok", got
    assert got["chmod"] == "ok" and got["a"] == "fixture\nagent\n"
    assert got["device"] != "ok"  # no device node: no CAP_MKNOD in the host's namespace
    # the fixture: untouched, in content, owner and mode
    assert tree_digests(fx) == before and owners(fx) == before_owners
    # the host's one walk of the final state is what the sandbox saw (whiteouts are the kernel's)
    final = ws.state_of(live, 1 << 30)
    assert sorted(final.digests) == got["seen"], (sorted(final.digests), got["seen"])
    # the agent renamed a fixture folder (a redirect): the upper reader leaves it to the walk
    initial = ws.initial_state(fx, live, "k", setup_ran=False, budget=1 << 30, cache={})
    assert delta_scan(overlay_ws.get(live), initial.scan, 1 << 30) is None
    assert ws.final_state(live, initial.scan, 1 << 30) == final
    assert "sub/b.txt" not in final.digests and "c2.txt" in final.digests and "deep2/er/d.txt" in final.digests
    assert final.digests["passwd"] == "symlink:/etc/passwd"  # read as a link, never followed
    assert (live / "a.txt").read_text() == "fixture\nagent\n"
    # a planted 0/0 device is a whiteout to the kernel: it hid keep.txt, for the host as for the agent
    assert ("keep.txt" in final.digests) == ("keep.txt" in got["seen"])
    # the verifier's identity (another host uid) over the same workspace sees the same state
    again = await _run(bwrap_backend, live, "verifier", "import os, json; print(json.dumps({'seen': sorted("
                       "os.path.relpath(os.path.join(r, n), '.') for r, d, f in os.walk('.') for n in d + f "
                       "if os.path.islink(os.path.join(r, n)) or not os.path.isdir(os.path.join(r, n))), "
                       "'a': open('a.txt').read(), 'w': os.access('a.txt', os.W_OK)}))")
    assert again["seen"] == got["seen"] and again["a"] == got["a"] and again["w"] is True
    # a second attempt over the same fixture starts from the fixture, not from the first's writes
    live2 = tmp_path / "attempt2" / "workspace"
    ws.make_workspace(fx, live2, [])
    fresh = await _run(bwrap_backend, live2, "agent", "import os, json; print(json.dumps(sorted(os.listdir('.'))))")
    assert fresh == sorted(p for p in os.listdir(fx))
    ws.release_workspace(live)
    assert not os.path.ismount(live) and list(live.iterdir()) == []  # the scratch is plain folders again
    assert tree_digests(fx) == before and owners(fx) == before_owners


def test_a_fixture_with_two_owners_is_copied_not_overlaid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fx = fixture(tmp_path / "fx")
    os.lchown(fx / "c.txt", 4242, 4242)
    assert overlay_ws.fixture_owner(fx) is None
    live = tmp_path / "w"
    assert ws.make_workspace(fx, live, []) is False  # auto: the copy, as before
    assert not os.path.ismount(live) and (live / "c.txt").read_text() == "c\n"
    monkeypatch.setenv("ASSAY_WORKSPACE", "overlay")
    with pytest.raises(OSError, match="several owners"):
        ws.make_workspace(fx, tmp_path / "w2", [])


def test_a_stale_overlay_left_by_a_crashed_harness_is_unmounted_before_removal(
        tmp_path: Path, overlay_mode: None) -> None:
    fx = fixture(tmp_path / "fx")
    live = tmp_path / "w"
    ws.make_workspace(fx, live, [])
    overlay_ws._LIVE.clear()  # the harness that made it is gone
    ws.release_workspace(live)
    assert not os.path.ismount(live)
    assert (fx / "a.txt").read_text() == "fixture\n"


def test_the_upper_reader_gives_way_where_only_the_kernel_can_say(tmp_path: Path, overlay_mode: None) -> None:
    """An opaque folder and a whiteout it reads; a redirect, an unreadable entry or a spent hash
    budget it leaves to the merged walk (None), never a guess."""
    fx = fixture(tmp_path / "fx")
    live = tmp_path / "w"
    ws.make_workspace(fx, live, [])
    initial = ws.initial_state(fx, live, "k", setup_ran=False, budget=1 << 30, cache={})
    import shutil
    shutil.rmtree(live / "deep")  # as root, through the overlay: whiteouts
    (live / "deep").mkdir()  # over a whited-out folder: opaque
    (live / "deep" / "new.txt").write_text("n\n")
    (live / "a.txt").write_text("rewritten\n")
    os.rename(live / "sub", live / "sub2")  # a lower folder renamed: a redirect
    ow = overlay_ws.get(live)
    assert delta_scan(ow, initial.scan, 1 << 30) is None
    assert ws.final_state(live, initial.scan, 1 << 30) == ws.state_of(live, 1 << 30)
    os.rename(live / "sub2", live / "sub")
    shutil.rmtree(live / "sub")
    got = delta_scan(ow, initial.scan, 1 << 30)
    walked = ws.state_of(live, 1 << 30)
    assert got is not None and got == walked.scan and b"deep/er/d.txt" not in got and b"deep/new.txt" in got
    assert delta_scan(ow, initial.scan, 10) is None  # the budget could not hash both: the walk decides


def test_removing_a_scratch_never_deletes_through_a_live_overlay(tmp_path: Path, overlay_mode: None) -> None:
    """A runner killed mid-attempt leaves its overlay mounted; the next one removes the scratch:
    the mount is detached first, the scratch goes whole, the fixture stays."""
    from assay.untrusted.tree import remove_untrusted

    fx = fixture(tmp_path / "fx")
    before = tree_digests(fx)
    scratch = tmp_path / "scratch"
    ws.make_workspace(fx, scratch / "trial" / "workspace", [])
    overlay_ws._LIVE.clear()  # the harness that made it is gone
    remove_untrusted(scratch)
    assert not scratch.exists() and tree_digests(fx) == before


async def test_an_idmap_the_kernel_refuses_later_leaves_a_working_workspace(
        bwrap_backend: BwrapBackend, tmp_path: Path, overlay_mode: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The remount for a sandbox's uid fails (the kernel's refusal, forced here): the plain
    overlay comes back and the merged view is handed over as a copy would be; the agent can
    still write, and the fixture still stays as it was."""
    from assay.sandbox import mountapi

    fx = fixture(tmp_path / "fx")
    before = tree_digests(fx)
    live = tmp_path / "w"
    ws.make_workspace(fx, live, [])

    def refused(*a: object, **k: object) -> None:
        raise OSError(95, "idmapped mounts not supported")

    monkeypatch.setattr(mountapi, "idmapped_clone", refused)
    got = await _run(bwrap_backend, live, "agent", "import json; open('a.txt', 'a').write('x'); "
                     "print(json.dumps(open('a.txt').read()))")
    assert got == "fixture\nx" and tree_digests(fx) == before


async def test_a_workspace_held_open_on_the_host_is_handed_over_as_a_copy_not_a_crash(
        bwrap_backend: BwrapBackend, tmp_path: Path, overlay_mode: None) -> None:
    """Something of the harness's process holds the workspace open when the sandbox is made for
    its uid (another attempt's walk, or a child forked before its exec closed what it inherited:
    two attempts of one Ray worker, seen as an EBUSY harness crash on CI). The remount cannot
    happen; the merged view is handed over as a copy would be, and the attempt goes on."""
    fx = fixture(tmp_path / "fx")
    before = tree_digests(fx)
    live = tmp_path / "w"
    ws.make_workspace(fx, live, [])
    held = os.open(live / "sub", os.O_RDONLY | os.O_DIRECTORY)
    try:
        got = await _run(bwrap_backend, live, "agent", "import json; open('a.txt', 'a').write('x'); "
                         "print(json.dumps(open('a.txt').read()))")
        assert got == "fixture\nx" and tree_digests(fx) == before
        assert os.path.ismount(live)  # the overlay it was, never detached under its holder
        # the verifier's layer cannot be stacked while it is held: None, and the site copies
        site = tmp_path / "site" / "ws"
        assert overlay_ws.stack(live, site, tmp_path / "site" / "ws.layers") is None
        assert ws.state_of(live, 1 << 30).digests["a.txt"] == tree_digests(live)["a.txt"]
    finally:
        os.close(held)
    assert overlay_ws.stack(live, site, tmp_path / "site" / "ws.layers") is not None  # let go: a layer again
    assert (site / "a.txt").read_text() == "fixture\nx"
    overlay_ws.release(site)


async def test_a_verifier_site_is_a_layer_over_the_frozen_workspace_not_a_copy(
        bwrap_backend: BwrapBackend, tmp_path: Path, overlay_mode: None) -> None:
    """The code-running predicate's site over the final state: exactly the merged state the
    agent left (its deletions, renames and writes over the fixture), writable by the verifier's
    uid, and what the verifier writes reaches neither the agent's final state nor the fixture."""
    fx = fixture(tmp_path / "fx")
    before = tree_digests(fx)
    live = tmp_path / "attempt" / "workspace"
    ws.make_workspace(fx, live, [])
    await _run(bwrap_backend, live, "agent", "import os, json; os.remove('sub/b.txt'); os.rename('deep', 'deep2'); "
               "open('a.txt', 'a').write('agent'); open('new.txt', 'w').write('n'); print('{}')")
    final = ws.state_of(live, 1 << 30)
    site = tmp_path / "site" / "ws"
    assert overlay_ws.stack(live, site, tmp_path / "site" / "ws.layers") is not None
    assert ws.state_of(site, 1 << 30).digests == final.digests  # the same state, no copy
    got = await _run(bwrap_backend, site, "verifier", "import os, json; open('a.txt', 'a').write('verifier'); "
                     "os.remove('new.txt'); open('.pytest_cache', 'w').write('x'); "
                     "print(json.dumps(sorted(os.listdir('.'))))")
    assert "new.txt" not in got and "deep2" in got and "deep" not in got
    assert ws.state_of(live, 1 << 30).digests == final.digests  # the agent's final state: untouched
    assert tree_digests(fx) == before
    overlay_ws.release(site)
    from assay.untrusted.tree import remove_untrusted
    remove_untrusted(site.parent)
    assert not site.parent.exists() and tree_digests(fx) == before


@pytest.mark.parametrize("odd_name", [False, True])
def test_the_final_state_and_diff_from_the_changed_names_equal_a_whole_walks(
        tmp_path: Path, overlay_mode: None, odd_name: bool) -> None:
    """Over an overlay the final state's digests and the diff are made from the names the upper
    changed alone (the fixture's other names are not visited each trial): they must equal what a
    walk of the merged view and a comparison of every name give, for a rewrite, a deletion, a
    whiteout folder turned opaque, a new file and folder, a file where a folder was, a link and
    (the other case) a name that is not UTF-8, where the digests are computed whole."""
    import shutil

    from assay.run.workspace_delta import delta
    from assay.store.workspace_diff import build_workspace_diff, read_workspace_diff

    fx = fixture(tmp_path / "fx")
    live = tmp_path / "w"
    ws.make_workspace(fx, live, [])
    initial = ws.initial_state(fx, live, "k", setup_ran=False, budget=1 << 30, cache={})
    (live / "a.txt").write_text("rewritten\n")
    (live / "c.txt").unlink()
    shutil.rmtree(live / "deep")
    (live / "deep").mkdir()
    (live / "deep" / "new.txt").write_text("n\n")
    shutil.rmtree(live / "sub")
    (live / "sub").write_text("a file where a folder was\n")
    (live / "zz" / "new").mkdir(parents=True)
    (live / "zz" / "new" / "f.txt").write_text("f\n")
    os.symlink("/etc/passwd", live / "link")
    if odd_name:
        (live / os.fsdecode(b"bad-\xff.txt")).write_text("x\n")
    got = delta(overlay_ws.get(live), initial.scan, 1 << 30)
    assert got is not None
    now, changed = got
    assert b"keep.txt" not in changed and b"run.sh" not in changed  # untouched fixture names are not visited
    final = ws.final_state(live, initial.scan, 1 << 30)
    walked = ws.state_of(live, 1 << 30)
    assert final.changed == changed
    assert final.scan == walked.scan and final.digests == walked.digests
    assert list(final.digests) == sorted(final.digests)  # the order the verifier's digests always had
    whole = build_workspace_diff(live, initial.scan, before=fx, hash_budget=1 << 30, now=walked.scan)
    part = build_workspace_diff(live, initial.scan, before=fx, hash_budget=1 << 30, now=final.scan,
                                changed=final.changed)
    a, b = read_workspace_diff(whole), read_workspace_diff(part)
    assert a.entries == b.entries and a.contents == b.contents
    assert {e["path"] for e in a.entries} >= {"a.txt", "c.txt", "deep/er/d.txt", "deep/new.txt", "sub/b.txt",
                                               "sub", "zz/new/f.txt", "link"}
