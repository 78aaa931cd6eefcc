"""scripts/mirror_tests.py on a small repository of its own: a test moves to the folder of the
source it imports most, its relative imports and ``Path(__file__)`` lookups still reach the same
places, references elsewhere follow it, a test it is unsure about stays, and a second run moves
nothing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mirror_tests", ROOT / "scripts" / "mirror_tests.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, ModuleType]:
    write(tmp_path, {
        "src/assay/__init__.py": "", "src/assay/sandbox/__init__.py": "", "src/assay/sandbox/base.py": "",
        "src/assay/sandbox/bwrap/__init__.py": "", "src/assay/sandbox/bwrap/backend.py": "",
        "src/assay/sandbox/bwrap/pool.py": "", "src/assay/spec/__init__.py": "", "src/assay/spec/load.py": "",
        "tests/__init__.py": "", "tests/conftest.py": "", "tests/sandbox/__init__.py": "",
        "tests/sandbox/conftest.py": "import pytest\n\n@pytest.fixture\ndef box():\n    return 1\n",
        "tests/sandbox/walled.py": "def run_walled():\n    return 1\n",
        "tests/sandbox/data.txt": "x\n",
        # two bwrap modules against one shared one: moves, and takes its relative import and lookups along
        "tests/sandbox/test_pool.py": (
            "from pathlib import Path\n\nfrom assay.sandbox.base import Mount\n"
            "from assay.sandbox.bwrap.backend import BwrapBackend\nfrom assay.sandbox.bwrap import pool\n"
            "from .walled import run_walled\n\nHERE = Path(__file__).resolve().parent\n"
            "ROOT = Path(__file__).resolve().parents[1]\n"
            "CHILD = 'print(Path(__file__).parent)'  # inside a string: another file's __file__\n\n"
            "def test_pool(box):\n    assert (HERE / 'data.txt').is_file() and run_walled()\n"),
        # one of each: unsure, stays
        "tests/sandbox/test_tie.py": "from assay.sandbox.base import Mount\nfrom assay.sandbox.bwrap.pool import P\n",
        # a __file__ use it cannot re-level: stays
        "tests/sandbox/test_odd.py": ("import os\nfrom assay.sandbox.bwrap.pool import P\nfrom assay.sandbox.bwrap import backend\n"
                                      "HERE = os.path.dirname(__file__)\n"),
        # imports nothing of its room: stays
        "tests/sandbox/test_cli.py": "import subprocess\n",
        "docs/notes.md": "see tests/sandbox/test_pool.py and tests.sandbox.test_pool; not tests/sandbox/test_pool.pyc\n",
    })
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"], cwd=tmp_path, check=True)
    mod = load_script()
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    monkeypatch.setattr(mod, "SRC", tmp_path / "src" / "assay")
    monkeypatch.setattr(mod, "TESTS", tmp_path / "tests")
    monkeypatch.setattr(mod, "FOLDER_MOVES", {})
    return tmp_path, mod


def test_moves_fixes_and_is_idempotent(repo: tuple[Path, ModuleType], capsys: pytest.CaptureFixture[str]) -> None:
    root, mod = repo
    assert mod.main([]) == 0
    moved = root / "tests/sandbox/bwrap/test_pool.py"
    assert moved.is_file() and not (root / "tests/sandbox/test_pool.py").exists()
    assert (root / "tests/sandbox/bwrap/__init__.py").is_file()
    text = moved.read_text()
    assert "from tests.sandbox.walled import run_walled" in text
    assert "HERE = Path(__file__).resolve().parents[1]\n" in text  # still tests/sandbox
    assert "ROOT = Path(__file__).resolve().parents[2]\n" in text  # still tests/
    assert "CHILD = 'print(Path(__file__).parent)'" in text  # strings are not code
    assert (root / "docs/notes.md").read_text() == ("see tests/sandbox/bwrap/test_pool.py and tests.sandbox.bwrap.test_pool; "
                                                    "not tests/sandbox/test_pool.pyc\n")
    for stays in ("test_tie.py", "test_odd.py", "test_cli.py"):
        assert (root / "tests/sandbox" / stays).is_file(), stays
    staged = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout
    assert "R  tests/sandbox/test_pool.py -> tests/sandbox/bwrap/test_pool.py" in staged  # git mv: history follows
    capsys.readouterr()
    assert mod.main([]) == 0
    assert "nothing to move" in capsys.readouterr().out


def test_a_move_that_would_lose_a_conftest_is_not_made(repo: tuple[Path, ModuleType]) -> None:
    root, mod = repo
    write(root, {"tests/spec/__init__.py": "", "tests/sandbox/test_spec_things.py": (
        "from assay.spec.load import a\nfrom assay.spec import load\nimport assay.spec\n")})
    d = mod.decide(Path("tests/sandbox/test_spec_things.py"), mod.source_modules(),
                   mod.source_folders(mod.source_modules()))
    assert d.dest is None  # tests/sandbox is a source room: tests there only move down
