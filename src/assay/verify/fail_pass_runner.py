"""Runs a repository's own tests, by id, inside a predicate's sandbox (SWE-bench's grading) and
streams each report to the harness the way :mod:`assay.verify.pytest_runner` does.

Invoked as ``python -I -B …/test_lists_runner.py WORK INIFILE PYTHONPATH`` (by file: the assay
package is not imported) with a nonce and a JSON list of the wanted test ids on stdin. pytest is
imported before any workspace folder joins ``sys.path``; plugin autoload is off; the
configuration is the repository's own file named by the harness (``-c``, so no ``pytest.ini``
the agent planted beside the tests is read) or an empty one, with ``addopts`` emptied. Only the
files the wanted ids name are collected, and only the wanted ids run: an id that is never
collected is absent from the reports, which the harness counts as a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from typing import Any


class Select:
    """pytest plugin: keeps the wanted ids only (the rest are deselected, not run)."""

    def __init__(self, wanted: set[str]):
        self.wanted = wanted

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        drop = [i for i in items if i.nodeid not in self.wanted]
        items[:] = [i for i in items if i.nodeid in self.wanted]
        if drop:
            config.hook.pytest_deselected(items=drop)


def _stream_module() -> Any:
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytest_runner.py")
    spec = importlib.util.spec_from_file_location("_assay_pytest_runner", here)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _forget(folder: str) -> None:
    """Drop from ``sys.modules`` what the repository itself provides (a package pytest imported
    for itself, e.g. iniconfig), so the tests import the repository's copy, not the installed one."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    tops = {n[:-3] if n.endswith(".py") else n for n in names
            if n.endswith(".py") or os.path.isfile(os.path.join(folder, n, "__init__.py"))}
    for mod in [m for m in sys.modules if m.split(".", 1)[0] in tops]:
        del sys.modules[mod]


def main(argv: list[str]) -> int:
    work, inifile, pythonpath = argv
    nonce = sys.stdin.readline().strip()
    wanted = [str(i) for i in json.loads(sys.stdin.readline())]
    runner = _stream_module()
    out = os.fdopen(os.dup(1), "w")  # the report channel; fd 1 keeps carrying ordinary output
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        os.environ.pop(name, None)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        import pytest  # imported before the workspace joins sys.path
    except ImportError as e:
        print(f"assay verifier: pytest is not importable by {sys.executable}: {e}", file=sys.stderr)
        return runner.NO_PYTEST
    stream = runner.Stream(out, nonce)
    stream.emit(started=True)
    at = next((n for n, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))), len(sys.path))
    for d in reversed([p for p in pythonpath.split(os.pathsep) if p]):
        sys.path.insert(at, os.path.normpath(os.path.join(work, d)))
        _forget(os.path.join(work, d))
    os.chdir(work)
    files = sorted({i.split("::", 1)[0] for i in wanted})
    present = [f for f in files if os.path.isfile(os.path.join(work, f))]
    if not present:
        stream.emit(finish=5, collected=0)
        return 5
    ini = os.path.join(work, inifile) if inifile else runner.empty_ini()
    try:
        return int(pytest.main([
            *present, "-q", "-p", "no:cacheprovider", "-p", "no:stepwise", "-c", ini, f"--rootdir={work}",
            f"--confcutdir={work}", "-o", "addopts=", "-o", "xfail_strict=false",
        ], plugins=[stream, Select(set(wanted))]))
    finally:
        if not inifile:
            os.unlink(ini)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
