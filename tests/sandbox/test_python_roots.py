"""The interpreter's paths bound into a sandbox: its prefixes, assay's directory and the
interpreter's own, nothing under /usr. A clean interpreter's ``sys.path`` (``python -I``, one more
process on every run) once went in too, but only its entries inside the prefixes, which are
dropped again as nested: these tests hold the roots equal to what that reading gave."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import assay
from assay.sandbox.bwrap import rootfs


def _with_clean_path(prefixes: list[Path], others: list[Path], clean: list[Path]) -> tuple[Path, ...]:
    """The roots as they were computed with a clean interpreter's ``sys.path`` added."""
    wanted = [*prefixes, *others, *(p for p in clean if rootfs._covered(p, prefixes))]
    return tuple(rootfs.minimal_roots([p for p in wanted if not rootfs._covered(p, [Path("/usr")])]))


def test_the_roots_are_those_a_clean_interpreters_path_gave() -> None:
    out = subprocess.run([sys.executable, "-I", "-c", "import sys, json; print(json.dumps(sys.path))"],
                         capture_output=True, text=True, check=True)
    clean = [Path(p).resolve() for p in json.loads(out.stdout) if p]
    prefixes = [Path(p).resolve() for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}]
    others = [Path(assay.__file__).resolve().parent.parent, Path(sys.executable).resolve().parent]
    assert set(rootfs.python_roots()) == set(_with_clean_path(prefixes, others, clean))  # (their order is a set's)
    assert all(rootfs._covered(p, list(rootfs.python_roots()) + [Path("/usr")]) for p in clean
               if rootfs._covered(p, prefixes))  # every clean entry of the install is inside a root


_NAMES = st.lists(st.sampled_from(["a", "b", "lib", "site-packages", "usr"]), min_size=1, max_size=3)


@settings(max_examples=200, deadline=None)
@given(prefixes=st.lists(_NAMES, min_size=1, max_size=3), others=st.lists(_NAMES, max_size=2),
       clean=st.lists(_NAMES, max_size=6))
def test_entries_inside_a_prefix_never_change_the_roots(tmp_path_factory, prefixes, others, clean) -> None:
    root = tmp_path_factory.mktemp("tree")

    def made(parts: list[str]) -> Path:
        p = root.joinpath(*parts)
        p.mkdir(parents=True, exist_ok=True)
        return p

    pre, oth, cl = [made(p) for p in prefixes], [made(p) for p in others], [made(p) for p in clean]
    without = tuple(rootfs.minimal_roots([p for p in [*pre, *oth] if not rootfs._covered(p, [Path("/usr")])]))
    assert set(_with_clean_path(pre, oth, cl)) == set(without)
