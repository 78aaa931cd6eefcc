"""`environments/pip_records.py`: a RECORD for each Debian-installed distribution of a base, from
dpkg's list of its package's files, and nothing where whose file is whose is not known."""

from __future__ import annotations

from pathlib import Path

from assay.environments.pip_records import SITE, write_records


def _package(root: Path, name: str, files: list[str]) -> None:
    info = root / "var/lib/dpkg/info"
    info.mkdir(parents=True, exist_ok=True)
    for f in files:  # a folder ends in / or .dist-info; dpkg lists it without the /
        p = root / f.strip("/")
        if f.endswith(("/", ".dist-info")):
            p.mkdir(parents=True, exist_ok=True)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("x")
    (info / f"{name}.list").write_text("\n".join(["/usr", "/usr/bin", SITE, *(f.rstrip("/") for f in files)]) + "\n")


def test_a_debian_distribution_gets_its_packages_files(tmp_path: Path) -> None:
    _package(tmp_path, "python3-pluggy", [f"{SITE}/pluggy/", f"{SITE}/pluggy/__init__.py", f"{SITE}/pluggy/_hooks.py",
                                          f"{SITE}/pluggy-1.5.0.dist-info", f"{SITE}/pluggy-1.5.0.dist-info/METADATA"])
    _package(tmp_path, "python3-pytest", [f"{SITE}/pytest-8.3.5.dist-info", f"{SITE}/pytest-8.3.5.dist-info/METADATA",
                                          f"{SITE}/pytest/__init__.py", "/usr/bin/pytest-3"])
    (tmp_path / "usr/bin/pytest").symlink_to("pytest-3")
    (tmp_path / "var/lib/dpkg/info/python3-pytest.list").write_text(
        (tmp_path / "var/lib/dpkg/info/python3-pytest.list").read_text() + "/usr/bin/pytest\n/usr/bin/gone\n")
    assert write_records(tmp_path) == ["pluggy-1.5.0.dist-info", "pytest-8.3.5.dist-info"]
    record = (tmp_path / SITE.lstrip("/") / "pytest-8.3.5.dist-info/RECORD").read_text().splitlines()
    assert record == ["pytest-8.3.5.dist-info/METADATA,,", "pytest/__init__.py,,", "../../../bin/pytest-3,,",
                      "../../../bin/pytest,,", "pytest-8.3.5.dist-info/RECORD,,"]  # a link kept, a missing file not
    pluggy = (tmp_path / SITE.lstrip("/") / "pluggy-1.5.0.dist-info/RECORD").read_text().splitlines()
    assert "pluggy/_hooks.py,," in pluggy and "pluggy,," not in pluggy  # files, never folders


def test_what_is_not_known_is_left_as_it_is(tmp_path: Path) -> None:
    _package(tmp_path, "python3-two", [f"{SITE}/a-1.dist-info", f"{SITE}/a-1.dist-info/METADATA",
                                       f"{SITE}/b-1.dist-info", f"{SITE}/b-1.dist-info/METADATA", f"{SITE}/a.py"])
    _package(tmp_path, "python3-own", [f"{SITE}/c-1.dist-info", f"{SITE}/c-1.dist-info/METADATA"])
    (tmp_path / SITE.lstrip("/") / "c-1.dist-info/RECORD").write_text("c.py,,\n")
    (tmp_path / SITE.lstrip("/") / "orphan-1.dist-info").mkdir()
    assert write_records(tmp_path) == []
    assert not (tmp_path / SITE.lstrip("/") / "a-1.dist-info/RECORD").exists()
    assert (tmp_path / SITE.lstrip("/") / "c-1.dist-info/RECORD").read_text() == "c.py,,\n"  # its own, kept
    assert not (tmp_path / SITE.lstrip("/") / "orphan-1.dist-info/RECORD").exists()
    assert write_records(tmp_path / "nothing") == []
