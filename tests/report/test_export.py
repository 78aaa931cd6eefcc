"""assay export and assay.load_results: every attempt out in the versioned schema, figures that
recompute to the scorer's, refused on changed evidence, clear errors on bad arguments."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

import assay
from assay.report.export import COLUMNS, EXPORT_SCHEMA
from assay.score import score_run
from tests.conftest import cli_timeout
from assay.records.results import PredicateResult
from assay.report.export import iter_rows
from assay.store.rundir import RunDir
from tests.score.synth import attempt, trial_id, write_run


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True,
                          timeout=cli_timeout())


@pytest.fixture
def run(tmp_path: Path) -> Path:
    rs = [attempt("t1", "code", "a", 1, "infra_error", attempt=1, retryable=True, reason="sandbox", cost=0.5),
          attempt("t1", "code", "a", 1, "pass", attempt=2, cost=0.25),
          attempt("t2", "code", "a", 1, "fail", incidents=[{"type": "secret_leak", "severity": "high"}]),
          attempt("t3", "ops", "a", 1, "skipped", reason="unsupported"),
          attempt("t1", "code", "b", 1, "pass")]
    return write_run(tmp_path / "run", {"code": 1, "ops": 1}, rs, planned_extra=[trial_id("t4", "base", "b", 1)]).path


def test_jsonl_has_every_attempt_and_the_missing_trial(run: Path) -> None:
    proc = cli("export", str(run), "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(rows) == 6 and all(list(r) == list(COLUMNS) and r["schema"] == EXPORT_SCHEMA for r in rows)
    t1 = [r for r in rows if r["trial_id"] == trial_id("t1", "base", "a", 1)]
    assert [(r["attempt"], r["final"], r["end_state"]) for r in t1] == [(1, False, "infra_error"), (2, True, "pass")]
    lost = next(r for r in rows if r["trial_id"] == trial_id("t4", "base", "b", 1))
    assert (lost["attempt"], lost["final"], lost["end_state"], lost["reason"]) == (0, True, "infra_error", "missing")
    t2 = next(r for r in rows if r["task_id"] == "t2")
    assert t2["incidents"] == 1 and t2["incident_types"] == "secret_leak"


def test_csv_and_parquet_carry_the_same_columns(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    assert cli("export", str(run), "-f", "csv", "-o", str(out)).returncode == 0
    with open(out, newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == list(COLUMNS)
        assert len(list(reader)) == 6
    pq = pytest.importorskip("pyarrow.parquet")
    pout = tmp_path / "rows.parquet"
    proc = cli("export", str(run), "-f", "parquet", "-o", str(pout))
    assert proc.returncode == 0, proc.stderr
    table = pq.read_table(pout)
    assert table.column_names == list(COLUMNS) and table.num_rows == 6
    assert table.schema.metadata[b"schema"] == EXPORT_SCHEMA.encode()


def test_load_results_recomputes_the_scorers_figures(run: Path) -> None:
    pd = pytest.importorskip("pandas")
    df = assay.load_results(run)
    assert isinstance(df, pd.DataFrame) and df.attrs["schema"] == EXPORT_SCHEMA
    doc = score_run(run)
    for agent, m in doc.agents.items():
        final = df[(df.agent == agent) & df.final & (df.end_state != "skipped")]
        assert len(final) == m.scored
        assert final.strict_pass.sum() == m.passes
        assert df[df.agent == agent].cost_usd.sum() == pytest.approx(m.efficiency.total_cost_usd)


def test_export_refuses_changed_evidence_and_bad_arguments(run: Path, tmp_path: Path) -> None:
    assert cli("export", str(run), "-f", "xml").returncode == 2
    unknown = cli("export", str(run), "--to", "nowhere")
    assert unknown.returncode == 2 and "file" in unknown.stderr
    no_file = cli("export", str(run), "-f", "parquet")
    assert no_file.returncode == 2 and "--out" in no_file.stderr
    result = next((run / "trials" / trial_id("t2", "base", "a", 1)).rglob("result.json"))
    result.write_text(result.read_text().replace('"fail"', '"pass"'))  # a failed trial rewritten as a pass
    changed = cli("export", str(run), "-o", str(tmp_path / "x.jsonl"))
    assert changed.returncode == 3 and not (tmp_path / "x.jsonl").exists()


def test_a_file_export_checks_the_run_in_the_pass_that_reads_it(run: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """To a file, the export reads the run once, checking each trial folder as it reads it: the
    same rows as the check first and the read after; the run is read in one pass, not two."""
    from assay.report.export import ExportOptions, export_run
    from assay.store import scan as scan_module

    two = tmp_path / "two-passes.jsonl"
    two.write_text(cli("export", str(run), "-f", "jsonl").stdout)  # standard output: checked first, then read
    scans: list[bool] = []
    real = scan_module.RunScan.__init__

    def counted(self, rd, *, verify=True, **kw):  # type: ignore[no-untyped-def]
        scans.append(verify)
        real(self, rd, verify=verify, **kw)

    monkeypatch.setattr(scan_module.RunScan, "__init__", counted)
    one = tmp_path / "one-pass.jsonl"
    export_run(run, ExportOptions(fmt="jsonl", out=one))
    assert scans == [True]  # one scan of the run, a checking one
    assert one.read_text() == two.read_text() and len(one.read_text().splitlines()) == 6


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_a_file_export_of_changed_evidence_leaves_nothing(run: Path, tmp_path: Path, fmt: str) -> None:
    """Refused with exit 3 and verify's problems, in every format; neither the file nor its
    ``.part`` is left, and a file already under that name stays as it was."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    from assay.errors import IntegrityError
    from assay.report.export import ExportOptions, export_run
    from assay.store.integrity import verify_run

    result = next((run / "trials" / trial_id("t2", "base", "a", 1)).rglob("result.json"))
    result.write_text(result.read_text().replace('"fail"', '"pass"'))
    (run / "trials" / trial_id("t1", "base", "b", 1) / "extra.txt").write_text("added later\n")
    problems = verify_run(run).problems
    assert len(problems) == 2
    out = tmp_path / f"rows.{fmt}"
    out.write_text("an earlier export\n")
    with pytest.raises(IntegrityError) as e:
        export_run(run, ExportOptions(fmt=fmt, out=out))
    assert "refusing to export" in str(e.value) and all(p in str(e.value) for p in problems)
    assert out.read_text() == "an earlier export\n" and not out.with_name(out.name + ".part").exists()
    proc = cli("export", str(run), "-f", fmt, "-o", str(tmp_path / f"new.{fmt}"))
    assert proc.returncode == 3 and not (tmp_path / f"new.{fmt}").exists()
    assert list(tmp_path.glob("*.part")) == []


def test_jsonl_is_the_same_bytes_to_a_file_to_stdout_and_to_a_text_stream(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from assay.report.export import ExportOptions, iter_rows, to_file

    rs = [attempt("t1", "code", "a", 1, "fail", reason="délai dépassé ⏱", cost=0.1 + 0.2),
          attempt("t2", "code", "a", 1, "pass", cost=1e-7)]
    run = write_run(tmp_path / "run", {"code": 1}, rs).path
    out = tmp_path / "rows.jsonl"
    assert cli("export", str(run), "-o", str(out)).returncode == 0
    proc = subprocess.run([sys.executable, "-m", "assay.cli.main", "export", str(run)], capture_output=True,
                          timeout=cli_timeout())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == out.read_bytes()
    assert "délai dépassé ⏱".encode() in proc.stdout  # UTF-8 as written, not \u escapes
    text = io.StringIO()  # an embedding program's stdout without a binary layer
    monkeypatch.setattr(sys, "stdout", text)
    to_file(run, ExportOptions())
    assert text.getvalue().encode() == out.read_bytes()
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows == list(iter_rows(run))  # every value, floats to the last digit
    assert [r["cost_usd"] for r in rows] == [0.1 + 0.2, 1e-7]


def test_each_row_is_its_result_as_the_reference_reader_reads_it(tmp_path: Path) -> None:
    """Every field of every row from the result as pydantic reads it (RunDir.results): predicates
    held and not, none at all, incidents one, two and none, every end state, retries."""
    def preds(*held: bool) -> list[PredicateResult]:
        return [PredicateResult(id=f"p{k}", kind="file_exists", required=True, weight=1.0, passed=h)
                for k, h in enumerate(held)]

    two = [{"type": "secret_leak", "severity": "high"}, {"type": "left_behind_process", "severity": "low"}]
    rs = [attempt("t1", "code", "a", 1, "infra_error", retryable=True, reason="sandbox", wall=0.5),
          attempt("t1", "code", "a", 1, "pass", attempt=2, predicates=preds(True, True), cost=0.25, tokens=7),
          attempt("t2", "code", "a", 1, "fail", predicates=preds(True, False, False), incidents=two, wall=3.25),
          attempt("t3", "ops", "a", 1, "timeout", predicates=preds(False), incidents=two[:1], tool_calls=4),
          attempt("t4", "ops", "b", 1, "skipped", reason="unsupported"),
          attempt("t5", "ops", "b", 1, "pass", partial=True, interventions=2, diagnostic=50.0)]
    run = write_run(tmp_path / "run", {"code": 1, "ops": 1}, rs).path
    reference = {(r.trial_id, r.attempt): r for r in RunDir.open(run).results()}
    rows = list(iter_rows(run))
    assert len(rows) == len(reference) == 6
    finals = {tid: max(n for t, n in reference if t == tid) for tid, _n in reference}
    for row in rows:
        r = reference[(row["trial_id"], row["attempt"])]
        assert row["end_state"] == r.end_state.value and type(row["end_state"]) is str
        assert row["final"] is (r.attempt == finals[r.trial_id])
        assert (row["predicates_total"], row["predicates_held"]) == (len(r.predicates),
                                                                     sum(p.passed for p in r.predicates))
        assert (row["incidents"], row["incident_types"]) == (len(r.incidents), ";".join(i.type for i in r.incidents))
        assert (row["wall_s"], row["agent_s"], row["strict_pass"]) == (r.timings.wall_s, r.timings.agent_s,
                                                                       r.strict_pass)
        assert (row["retryable"], row["partial"], row["reason"], row["diagnostic_score"]) == (
            r.retryable, r.partial, r.reason, r.diagnostic_score)
        assert (row["cost_usd"], row["input_tokens"], row["tool_calls"], row["interventions"]) == (
            r.usage.cost_usd, r.usage.input_tokens, r.usage.tool_calls, r.usage.interventions)
    assert {row["incident_types"] for row in rows} == {"", "secret_leak", "secret_leak;left_behind_process"}
    assert {row["predicates_held"] for row in rows} == {0, 1, 2}
