"""`RunDir.sealed_digest` (one path's digest without indexing the ledger) says what
`RunDir.ledger()` says, for every path of a ledger with torn, foreign, repeated and odd lines."""

from __future__ import annotations

import json
from pathlib import Path

from assay.store.rundir import LEDGER, MANIFEST
from tests.score.synth import attempt, write_run


def test_sealed_digest_agrees_with_the_ledger(tmp_path: Path) -> None:
    rd = write_run(tmp_path / "r", {"code": 1}, [attempt(f"t{i}", "code", "a", 1, "pass") for i in range(5)])
    with open(rd.path / LEDGER, "ab") as f:
        f.write(b'{"path": "trials/t1.base.a.r1/attempts/1/result.json", "sha256": "' + b"1" * 64 + b'"}\n')
        f.write(b'not json at all, manifest.json mentioned\n')
        f.write(b'{"path": "manifest.json", "sha256": 7}\n')  # JSON, not a record: ignored by both
        f.write(b'{"path": "x", "sha256": "' + b"2" * 64 + b'"}\r{"path": "manifest.json.bak", "sha256": "'
                + b"3" * 64 + b'"}\n')
        f.write(b'{"path": "torn", "sha')
    ledger = rd.ledger()
    assert ledger["trials/t1.base.a.r1/attempts/1/result.json"] == "1" * 64  # the last record wins
    for rel in [*ledger, MANIFEST, "manifest.json.bak", "absent", "torn"]:
        assert rd.sealed_digest(rel) == ledger.get(rel), rel
    assert rd.manifest().run_id == "synthetic"


def test_a_manifest_resealed_with_another_digest_is_refused(tmp_path: Path) -> None:
    import pytest

    from assay.errors import IntegrityError

    rd = write_run(tmp_path / "r", {"code": 1}, [attempt("t", "code", "a", 1, "pass")])
    with open(rd.path / LEDGER, "a") as f:
        f.write(json.dumps({"path": MANIFEST, "sha256": "0" * 64, "ts": 1.0}) + "\n")
    with pytest.raises(IntegrityError, match="changed since it was written"):
        rd.manifest()
