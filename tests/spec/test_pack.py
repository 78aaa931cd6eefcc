"""Suite packages: what runs is exactly what was packed, or nothing runs."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import zstandard

from assay.errors import UsageError
from assay.spec.load import load_suite
from assay.spec.pack import open_package, pack_suite
from tests.conftest import assay_env, cli_timeout


def assay(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = assay_env()
    env["XDG_CACHE_HOME"] = str(cache)
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True, env=env,
                          timeout=cli_timeout())


def rewrite_member(pkg: Path, name: str, data: bytes) -> None:
    raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(pkg.read_bytes())).read()
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(raw)) as src, tarfile.open(fileobj=out, mode="w") as dst:
        for m in src:
            content = src.extractfile(m).read()
            if m.name == name:
                content = data
                m.size = len(data)
            dst.addfile(m, io.BytesIO(content))
    pkg.write_bytes(zstandard.ZstdCompressor().compress(out.getvalue()))


def test_pack_is_reproducible_and_carries_the_suite_digest(calc_suite: Path, tmp_path: Path) -> None:
    a = pack_suite(calc_suite, tmp_path / "a.tar.zst")
    b = pack_suite(calc_suite, tmp_path / "b.tar.zst")
    assert a.path.read_bytes() == b.path.read_bytes()
    assert a.digest == "sha256:" + load_suite(calc_suite).digest
    named = pack_suite(calc_suite, tmp_path)  # a folder: the file is named by digest
    assert a.digest.removeprefix("sha256:")[:12] in named.path.name
    dest = open_package(a.path, expect=a.digest, cache=tmp_path / "cache")
    unpacked = load_suite(dest)
    assert unpacked.digest == load_suite(calc_suite).digest
    assert (dest / "tasks/calc/hidden/tests/test_calc.py").is_file()


def test_run_package_with_expected_digest_and_resume_finds_it(calc_suite: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    proc = assay("pack", str(calc_suite), "-o", str(tmp_path / "s.tar.zst"), cache=cache)
    assert proc.returncode == 0, proc.stderr
    digest = proc.stdout.split("suite digest: ")[1].split()[0]
    run = assay("run", str(tmp_path / "s.tar.zst"), "--expect-digest", digest, "--agent", "oracle", "--sandbox", "host",
                "--out", str(tmp_path / "run"), "-q", cache=cache)
    assert run.returncode == 0, run.stderr
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    assert "sha256:" + manifest["suite"]["digest"] == digest
    assert Path(manifest["suite"]["path"]).is_relative_to(cache)


def test_wrong_digest_refused_before_anything_is_written(calc_suite: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    pack_suite(calc_suite, tmp_path / "s.tar.zst")
    for target in (tmp_path / "s.tar.zst", calc_suite):
        proc = assay("run", str(target), "--expect-digest", "sha256:" + "1" * 64, "--agent", "oracle",
                     "--sandbox", "host", "--out", str(tmp_path / "run"), cache=cache)
        assert proc.returncode == 2 and "refused" in proc.stderr and "Traceback" not in proc.stderr
        assert not (tmp_path / "run").exists()


def test_edited_suite_folder_no_longer_matches(calc_suite: Path, tmp_path: Path) -> None:
    digest = pack_suite(calc_suite, tmp_path / "s.tar.zst").digest
    (calc_suite / "tasks/calc/prompt.md").write_text("Do something else.")
    proc = assay("run", str(calc_suite), "--expect-digest", digest, "--agent", "oracle", "--sandbox", "host",
                 "--out", str(tmp_path / "run"), cache=tmp_path / "cache")
    assert proc.returncode == 2 and "is not the expected" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_tampered_package_refused(calc_suite: Path, tmp_path: Path) -> None:
    res = pack_suite(calc_suite, tmp_path / "s.tar.zst")
    rewrite_member(res.path, "suite/tasks/calc/hidden/tests/test_calc.py", b"def test_x():\n    pass\n")
    with pytest.raises(UsageError, match="does not match its digest"):
        open_package(res.path, cache=tmp_path / "cache")
    with pytest.raises(UsageError, match="not a suite package"):
        (tmp_path / "junk.tar.zst").write_bytes(b"not zstd")
        open_package(tmp_path / "junk.tar.zst", cache=tmp_path / "cache")


def test_index_rewritten_to_match_tampered_files_still_fails_the_expected_digest(calc_suite: Path, tmp_path: Path) -> None:
    res = pack_suite(calc_suite, tmp_path / "s.tar.zst")
    raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(res.path.read_bytes())).read()
    with tarfile.open(fileobj=io.BytesIO(raw)) as t:
        index = json.loads(t.extractfile("assay-package.json").read())
    new_test = b"def test_x():\n    pass\n"
    import hashlib

    index["files"]["tasks/calc/hidden/tests/test_calc.py"] = hashlib.sha256(new_test).hexdigest()
    rewrite_member(res.path, "suite/tasks/calc/hidden/tests/test_calc.py", new_test)
    rewrite_member(res.path, "assay-package.json", json.dumps(index).encode())
    with pytest.raises(UsageError, match="the package says"):  # the recomputed suite digest differs
        open_package(res.path, cache=tmp_path / "cache")


def test_changed_cache_copy_is_unpacked_again(calc_suite: Path, tmp_path: Path) -> None:
    res = pack_suite(calc_suite, tmp_path / "s.tar.zst")
    dest = open_package(res.path, cache=tmp_path / "cache")
    (dest / "tasks/calc/prompt.md").write_text("tampered")
    again = open_package(res.path, expect=res.digest, cache=tmp_path / "cache")
    assert (again / "tasks/calc/prompt.md").read_text() == (calc_suite / "tasks/calc/prompt.md").read_text()


def test_pack_into_missing_folder_is_a_usage_error(calc_suite: Path, tmp_path: Path) -> None:
    proc = assay("pack", str(calc_suite), "-o", str(tmp_path / "no" / "s.tar.zst"), cache=tmp_path / "cache")
    assert proc.returncode == 2 and "does not exist" in proc.stderr and "Traceback" not in proc.stderr


def test_a_folder_held_to_a_digest_runs_from_a_sealed_copy(calc_suite: Path, tmp_path: Path) -> None:
    """What runs is what was checked: the run reads a copy made at the check, not the folder."""
    import json

    digest = pack_suite(calc_suite, tmp_path / "s.tar.zst").digest
    proc = assay("run", str(calc_suite), "--expect-digest", digest, "--agent", "oracle", "--sandbox", "host",
                 "--out", str(tmp_path / "run"), cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert Path(manifest["suite"]["path"]).is_relative_to(tmp_path / "cache")
    assert manifest["suite"]["digest"] == digest.removeprefix("sha256:")
