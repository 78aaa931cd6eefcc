"""A run directory's manifest is checked against its seal every time it is read, and parsed once
for the same bytes: a report at 10^6 trials read it four times (31 MB, about a third of a second
each to validate). The cache is the bytes' digest, so a manifest changed between two reads, even in
place at the same size within the same clock tick, is refused at the second."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import IntegrityError
from assay.records.manifest import RunManifest
from assay.store.rundir import MANIFEST, RunDir
from tests.score.synth import attempt, write_run


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    parsed: list[int] = []
    real = RunManifest.model_validate_json

    def counted(data: bytes | str, *a: object, **k: object) -> RunManifest:
        parsed.append(len(data))
        return real(data, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(RunManifest, "model_validate_json", counted)
    return parsed


def test_the_same_bytes_are_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rd = write_run(tmp_path / "run", {"code": 1}, [attempt("t", "code", "a", 1, "pass")])
    parsed = _counting(monkeypatch)
    first = rd.manifest()
    assert rd.manifest() is first and rd.manifest(check_sealed=False) is first
    assert len(parsed) == 1
    assert RunDir.open(rd.path).manifest() == first and len(parsed) == 2  # another RunDir reads for itself


def test_a_manifest_changed_in_place_between_two_reads_is_refused(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    rd = write_run(tmp_path / "run", {"code": 1}, [attempt("t", "code", "a", 1, "pass")])
    parsed = _counting(monkeypatch)
    assert rd.manifest().run_id == "synthetic"
    path = rd.path / MANIFEST
    data = path.read_bytes()
    forged = data.replace(b'"synthetic"', b'"synthetik"', 1)
    assert len(forged) == len(data) and forged != data
    with open(path, "r+b") as f:  # the same inode, the same size, at once
        f.write(forged)
    with pytest.raises(IntegrityError, match="changed since it was written"):
        rd.manifest()
    # unchecked, the new bytes are what is read (never the earlier parse)
    assert rd.manifest(check_sealed=False).run_id == "synthetik" and len(parsed) == 2
    with open(path, "r+b") as f:  # put back: the sealed bytes, parsed again or not, are the run's
        f.write(data)
    assert rd.manifest().run_id == "synthetic"
