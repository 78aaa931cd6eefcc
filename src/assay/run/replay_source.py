"""The source of a replay (``--model replay:RUN_DIR``, the judge's too) held to its evidence:
a replay serves the sealed recordings of that run, never files edited since, and the new run's
manifest names the source by its run digest (docs/gateway.md, "Replay")."""

from __future__ import annotations

from pathlib import Path

from assay.errors import IntegrityError
from assay.records.manifest import GatewayRecord, RunManifest
from assay.store.integrity import require_intact, run_digest
from assay.store.ledger_line import ledger_record
from assay.store.rundir import LEDGER, TRIALS


def replay_source_checked(record: GatewayRecord) -> GatewayRecord:
    """A replay of a run directory serves that run's sealed recordings: the source run must pass
    its integrity check (a reply edited after it was sealed is refused, exit 3, before anything is
    written), and the record names it by its run digest, not by its id alone."""
    settings = record.settings or {}
    if record.backend != "replay" or settings.get("kind") != "run_dir":
        return record
    source = Path(settings["source"])
    require_intact(source, action="replay its recorded model sessions")
    size = (source / LEDGER).stat().st_size
    return record.model_copy(update={"settings": {**settings, "source_run_digest": run_digest(source, ledger_bytes=size),
                                                  "source_ledger_bytes": size}})


def replay_sources_unchanged(manifest: RunManifest) -> None:
    """A resumed replay serves the recordings its manifest names: the source run must still pass
    its integrity check, its manifest and the ledger it had when the run began must be unchanged,
    and nothing of its trials sealed since (exit 3 otherwise). What else was appended to its
    ledger (its score files: scoring the source) changes no recording and is not refused."""
    for record in (manifest.gateway, manifest.judge):
        settings = (record.settings or {}) if record is not None else {}
        recorded = settings.get("source_run_digest")
        if recorded is None:
            continue
        source = Path(settings["source"])
        require_intact(source, action="replay its recorded model sessions")
        size = settings.get("source_ledger_bytes")
        then = run_digest(source, ledger_bytes=size)
        if then != recorded:
            raise IntegrityError(f"{source}: the replayed run changed since this run began (run digest {then}, "
                                 f"recorded {recorded}); refusing to resume a replay of other recordings")
        went_on = [] if size is None else _trial_files_sealed_after(source / LEDGER, size)
        if went_on:
            raise IntegrityError(f"{source}: the replayed run went on since this run began ({len(went_on)} trial "
                                 f"file(s) sealed since, first {went_on[0]}); its recordings are not the ones this "
                                 "run replayed, so the resume is refused (replay it again into a new run directory)")


def _trial_files_sealed_after(ledger: Path, size: int) -> list[str]:
    """Trial files the source's ledger sealed after its first ``size`` bytes (a resume of the
    source run; what else is appended, its score files, changes no recording)."""
    paths = []
    with open(ledger, "rb") as f:
        f.seek(size)
        for line in f:
            record = ledger_record(line.decode("utf-8", "replace"))
            if record is not None and record[0].startswith(f"{TRIALS}/"):
                paths.append(record[0])
    return paths


__all__ = ["replay_source_checked", "replay_sources_unchanged"]
