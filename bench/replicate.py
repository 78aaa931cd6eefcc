"""A large run directory of a real run's shape: every trial folder of a real run (its results,
traces, markers and the artifacts they name) repeated K times under new repetition numbers, sealed
in a ledger as the runner seals it, with a manifest planning every copy. `bench/score.py`'s run
directories hold one result per trial and nothing else; a real run's trials also have a trace, a
workspace diff and more artifacts, which the scorer reads too (the facts of the trace, the
reward-hack screen), so a scan's figures on them are the ones a user sees.

    python bench/replicate.py --run /work/runs/real --times 10 --out /work/runs/real-18000
    python bench/replicate.py --run /work/runs/real-log --times 10 --out /work/runs/real-log-18000  # --results log
    python bench/commands.py --run /work/runs/real-18000 --only score verify

The copies are byte-for-byte the real files with the trial id and the repetition number changed;
artifacts are hard links (content-addressed, shared as a real run's repeats share identical
diffs). The result is checked with `assay verify` semantics before it is used (the last line).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from contextlib import nullcontext
from pathlib import Path

from assay.records.manifest import RunManifest
from assay.spec.digest import sha256_bytes
from assay.store.integrity import verify_run
from assay.store.results_log import LOG, LogIndex, is_log, log_key
from assay.store.rundir import ARTIFACTS, LEDGER, MANIFEST, TRIALS, RunDir

REP = re.compile(r"^(?P<series>.+)\.r(?P<rep>\d+)$")


def renamed(tid: str, k: int, repeat: int) -> tuple[str, int, int]:
    """(the copy's trial id, its old repetition, its new one) for copy ``k``."""
    m = REP.match(tid)
    if m is None:
        raise SystemExit(f"{tid}: not a trial id ending in .rN")
    old = int(m["rep"])
    new = old + k * repeat
    return f"{m['series']}.r{new}", old, new


def copy_file(src: Path, old_id: str, new_id: str, old_rep: int, new_rep: int) -> bytes:
    data = src.read_bytes()
    if old_id == new_id:
        return data
    data = data.replace(f'"trial_id": "{old_id}"'.encode(), f'"trial_id": "{new_id}"'.encode())
    data = data.replace(f'"trial_id":"{old_id}"'.encode(), f'"trial_id":"{new_id}"'.encode())
    if src.name == "result.json":
        data = data.replace(f'"repetition": {old_rep},'.encode(), f'"repetition": {new_rep},'.encode(), 1)
    return data


def replicate(run: Path, times: int, out: Path) -> int:
    manifest = RunManifest.model_validate_json((run / MANIFEST).read_bytes())
    repeat = manifest.plan.repeat
    planned = [renamed(tid, k, repeat)[0] for tid in manifest.plan.trials for k in range(times)]
    plan = manifest.plan.model_copy(update={"trials": planned, "repeat": repeat * times})
    RunDir.create(out, manifest.model_copy(update={"plan": plan}))
    for src in sorted((run / ARTIFACTS / "sha256").glob("*/*")):
        dest = out / ARTIFACTS / "sha256" / src.parent.name / src.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.link(src, dest)
    files = 0
    log = LogIndex(run) if is_log(run / LOG) else None  # a run of the results log: its lines copied too
    with open(out / LEDGER, "a") as ledger, open(out / LOG, "ab") if log is not None else nullcontext() as lines:
        for tdir in sorted((run / TRIALS).iterdir()):
            for k in range(times):
                new_id, old_rep, new_rep = renamed(tdir.name, k, repeat)
                for src in sorted(p for p in tdir.rglob("*") if p.is_file()):
                    rel = f"{TRIALS}/{new_id}/{src.relative_to(tdir).as_posix()}"
                    data = copy_file(src, tdir.name, new_id, old_rep, new_rep)
                    (out / rel).parent.mkdir(parents=True, exist_ok=True)
                    (out / rel).write_bytes(data)
                    ledger.write(json.dumps({"path": rel, "sha256": sha256_bytes(data), "ts": time.time()},
                                            sort_keys=True) + "\n")
                    files += 1
                for i in log.entries(tdir.name) if log is not None else []:
                    data = copy_line(log.read(i), tdir.name, new_id, old_rep, new_rep)
                    lines.write(data + b"\n")
                    ledger.write(json.dumps({"path": log_key(new_id, log.attempt(i)), "sha256": sha256_bytes(data),
                                             "ts": time.time()}, sort_keys=True) + "\n")
                    files += 1
    return files


def copy_line(data: bytes, old_id: str, new_id: str, old_rep: int, new_rep: int) -> bytes:
    """A result line of the log, as :func:`copy_file` copies a result file (compact JSON)."""
    if old_id == new_id:
        return data
    data = data.replace(f'"trial_id":"{old_id}"'.encode(), f'"trial_id":"{new_id}"'.encode())
    return data.replace(f'"repetition":{old_rep},'.encode(), f'"repetition":{new_rep},'.encode(), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, required=True, help="a finished real run directory")
    ap.add_argument("--times", type=int, required=True, help="copies of each trial folder")
    ap.add_argument("--out", type=Path, required=True, help="a new run directory")
    args = ap.parse_args()
    t0 = time.perf_counter()
    files = replicate(args.run, args.times, args.out)
    print(f"{files:,d} files in {time.perf_counter() - t0:.1f} s")
    report = verify_run(args.out)
    print(f"verify: {'intact' if report.ok else 'PROBLEMS'}, {report.checked:,d} files checked")
    if not report.ok:
        raise SystemExit("\n".join(report.problems[:10]))


if __name__ == "__main__":
    main()
