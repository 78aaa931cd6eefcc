"""``sqlite_copy`` removes its private copy whether the database could be read or not: an agent's
database that is a link (or missing, or too large) is refused, and once left an empty
``assay-native-db-*`` folder in the temporary folder for every refusal."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

import pytest

from assay.untrusted.files import Unsafe, sqlite_copy


@pytest.fixture()
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def test_a_refused_database_leaves_no_folder(tmp_path: Path, private_tmp: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "elsewhere.sqlite").write_bytes(b"x")
    os.symlink(tmp_path / "elsewhere.sqlite", home / "db.sqlite")  # the agent's link: never followed
    with pytest.raises(Unsafe):
        with sqlite_copy(home, "db.sqlite"):
            pass
    with pytest.raises(Unsafe):
        with sqlite_copy(home, "missing.sqlite"):
            pass
    assert os.listdir(private_tmp) == []


def test_a_read_database_leaves_no_folder(tmp_path: Path, private_tmp: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    con = sqlite3.connect(home / "db.sqlite")
    con.execute("create table t (x)")
    con.execute("insert into t values (7)")
    con.commit()
    con.close()
    with sqlite_copy(home, "db.sqlite") as db:
        assert db.execute("select x from t").fetchall() == [(7,)]
    assert os.listdir(private_tmp) == []
