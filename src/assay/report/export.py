"""The raw data out: one row per attempt, in a versioned schema (``assay.results/1``).

Rows follow the scorer's rules so a reader can recompute every figure: every attempt is a row
(retried ones included, ``final`` marks the trial's result), and a planned trial without any
result is a row with ``attempt = 0``, ``end_state = infra_error`` and ``reason = missing``.
Formats: JSON Lines and CSV (standard library), Parquet (pyarrow, ``pip install -e '.[data]'`` in the assay checkout).
Export targets are a registry (``--to``): ``file`` is built in; other targets (an observability
platform, say) register under the ``assay.export_targets`` entry-point group.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from assay.errors import IntegrityError, UsageError
from assay.registry import Registry
from assay.report.export_child import export_in_child, rows_in_child
from assay.report.export_rows import (COLUMNS, EXPORT_SCHEMA, _csv, _jsonl, iter_rows, row_context, rows_of,
                                      write_rows)
from assay.spec.user_file import check_output_path, unwritable
from assay.store.rundir import RunDir
from assay.store.integrity import refusal
from assay.store.scan import RunScan

FORMATS = ("jsonl", "csv", "parquet")


def _parquet(rows: Iterator[dict[str, Any]], path: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError("--format parquet needs pyarrow (fix: pip install -e '.[data]' in the assay checkout)") from None
    types = {"str": pa.string(), "str?": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    schema = pa.schema([(c, types[t]) for c, (t, _) in COLUMNS.items()], metadata={"schema": EXPORT_SCHEMA})
    pq.write_table(pa.Table.from_pylist(list(rows), schema=schema), path)


@dataclass(frozen=True)
class ExportOptions:
    """What ``assay export`` was asked for; a target reads what it needs."""

    fmt: str = "jsonl"
    out: Path | None = None  # None or '-': standard output (not for parquet)


def to_file(run_dir: Path, opts: ExportOptions, *, checked: bool = False) -> str:
    """The built-in target: a JSONL, CSV or Parquet file (or standard output); an output that
    cannot be written is a usage error naming it, and leaves no half file. ``checked``: the run's
    integrity is checked in the same pass that reads it (a file output only), and a run that fails
    it leaves nothing under the asked name."""
    if opts.fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {opts.fmt!r}")
    to_stdout = opts.out is None or str(opts.out) == "-"
    if not to_stdout:
        check_output_path("--out", opts.out)
        try:
            return _to_path(run_dir, opts, checked)
        except OSError as e:
            if opts.out is not None:
                opts.out.with_name(opts.out.name + ".part").unlink(missing_ok=True)
            raise unwritable("--out", opts.out, e) from None  # type: ignore[arg-type]
    if opts.fmt == "parquet":
        raise UsageError("--format parquet writes a file (fix: add --out FILE.parquet)")
    if opts.fmt == "csv":
        _csv(iter_rows(run_dir), sys.stdout)  # type: ignore[arg-type]
        return ""
    sys.stdout.flush()
    binary = getattr(sys.stdout, "buffer", None)
    if binary is not None:
        _jsonl(iter_rows(run_dir), binary)
        binary.flush()
    else:  # a text-only stream (an embedding program's): the same bytes, decoded
        data = io.BytesIO()
        _jsonl(iter_rows(run_dir), data)
        sys.stdout.write(data.getvalue().decode("utf-8"))
    return ""


def _to_path(run_dir: Path, opts: ExportOptions, checked: bool = False) -> str:
    assert opts.out is not None
    opts.out.parent.mkdir(parents=True, exist_ok=True)  # as --junit and --summary-md do
    scan = RunScan(RunDir.open(run_dir), verify=True, outputs=False) if checked else None  # scores: verify's
    if opts.fmt == "parquet":
        rows = list(iter_rows(run_dir, scan))
        _refuse_changed(run_dir, scan)
        _parquet(iter(rows), opts.out)
        return f"exported {run_dir} as parquet: {opts.out}"
    tmp = opts.out.with_name(opts.out.name + ".part")
    try:
        _write_rows(run_dir, scan, tmp, opts.fmt)
        _refuse_changed(run_dir, scan)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(opts.out)  # a failed export leaves no half file under the asked name
    return f"exported {run_dir} as {opts.fmt}: {opts.out}"


def _write_rows(run_dir: Path, scan: RunScan | None, out: Path, fmt: str) -> None:
    """The rows to ``out`` (JSON Lines or CSV), by a child beside the scan for a large run. The
    manifest and the plan are let go on return, before the scan's checks at the end (at 10^6
    trials they are 30 MB of the peak)."""
    rd = RunDir.open(run_dir)  # not the scan's: its parsed manifest goes with it
    ctx, planned = row_context(rd)
    reader = scan or RunScan(rd, verify=False)
    if export_in_child(len(planned), reader.readers(len(planned)), fmt) and rows_in_child(reader, planned, ctx, out,
                                                                                          fmt):
        return  # a large run: its rows written beside the scan
    write_rows(rows_of(reader, planned, ctx), out, fmt)


def _refuse_changed(run_dir: Path, scan: RunScan | None) -> None:
    """With a checking scan: the refusal `assay verify`'s problems make (exit 3), if any."""
    if scan is None:
        return
    _checked, problems = scan.finish()
    if problems:
        raise refusal(run_dir, problems, action="export")


Target = Callable[[Path, ExportOptions], str]
EXPORT_TARGETS: Registry[Target] = Registry("export target", "assay.export_targets",
                                            {"file": "assay.report.export:to_file"})


def export_run(run_dir: Path | str, opts: ExportOptions, *, to: str = "file", verify: bool = True) -> str:
    """Export a run (integrity first: changed evidence is refused with exit 3) through a target."""
    from assay.score.engine import check_integrity

    rd = RunDir.open(run_dir)
    target = EXPORT_TARGETS.get(to)
    if verify and target is to_file and opts.out is not None and str(opts.out) != "-":
        try:  # one pass: each trial folder checked as it is read for the file
            return to_file(rd.path, opts, checked=True)
        except (IntegrityError, UsageError):
            raise
        except Exception:
            check_integrity(rd.path)  # a run whose evidence changed: the full report, not the crash
            raise
    if verify:
        check_integrity(rd.path)
    return target(rd.path, opts)


def load_results(run_dir: Path | str) -> Any:
    """The run's attempts as a pandas DataFrame (``assay.results/1`` columns; ``pip install -e '.[data]'`` in the assay checkout)."""
    try:
        import pandas as pd
    except ImportError:
        raise UsageError("load_results needs pandas (fix: pip install -e '.[data]' in the assay checkout)") from None
    from assay.score.engine import check_integrity

    rd = RunDir.open(run_dir)
    check_integrity(rd.path)
    df = pd.DataFrame.from_records(list(iter_rows(rd.path)), columns=list(COLUMNS))
    df.attrs["schema"] = EXPORT_SCHEMA
    return df


__all__ = ["COLUMNS", "EXPORT_SCHEMA", "EXPORT_TARGETS", "FORMATS", "ExportOptions", "export_run", "iter_rows",
           "load_results", "to_file"]
