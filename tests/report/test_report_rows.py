"""The report reads its trial rows through the one reader: a JSON report written to a file keeps
them in a side file beside it; the HTML report details a bounded number of trials (and every one
a table links to); trace timelines are drawn without matplotlib, each tick a link."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from assay.records.trial_file import iter_trials
from assay.report import build_report, write_report
from assay.report.detailed import detailed_rows
from assay.report.figures import Event
from assay.report.timeline_svg import timeline_svg
from assay.score import score_run
from tests.score.synth import attempt, write_run


def _run(tmp_path: Path, n: int = 12) -> Path:
    rs = [attempt(f"t{i}", "code", "a", 1, "pass" if i % 3 else "fail") for i in range(n)]
    rs[-1] = attempt(f"t{n - 1}", "code", "a", 1, "pass",
                     incidents=[{"type": "secret_leak", "severity": "critical", "summary": "canary"}])
    return write_run(tmp_path / "run", {"code": 1}, rs).path


def test_a_json_report_file_has_its_rows_beside_it(tmp_path: Path) -> None:
    run = _run(tmp_path)
    path = write_report(run, "json", out=tmp_path / "out" / "r.json")
    data = json.loads(path.read_text())
    assert data["score"]["trials"] == [] and data["score"]["trials_file"]["path"] == "r.trials.jsonl"
    side = path.with_name("r.trials.jsonl")
    assert data["score"]["trials_file"]["rows"] == 12 == len(side.read_bytes().splitlines())
    printed = json.loads(build_report(run, "json"))["score"]
    assert printed["trials_file"] is None and len(printed["trials"]) == 12
    assert [r["trial_id"] for r in printed["trials"]] == [json.loads(x)["row"]["trial_id"]
                                                           for x in side.read_bytes().splitlines()]


def test_the_html_report_details_a_bounded_number_and_every_linked_trial(tmp_path: Path) -> None:
    doc = score_run(_run(tmp_path))
    rows, total = detailed_rows(doc, limit=3)
    assert total == 12
    assert [r.trial_id for r in rows] == ["t0.base.a.r1", "t1.base.a.r1", "t2.base.a.r1", "t11.base.a.r1"]
    rows, total = detailed_rows(doc, limit=100)
    assert [r.trial_id for r in rows] == [r.trial_id for r in iter_trials(doc)]


def test_the_html_report_says_what_it_does_not_detail(tmp_path: Path, monkeypatch) -> None:
    import assay.report.detailed as detailed
    import assay.report.html as html

    monkeypatch.setattr(detailed, "DETAIL_LIMIT", 2)
    monkeypatch.setattr(html, "DETAIL_LIMIT", 2)
    monkeypatch.setattr(html, "detailed_rows", lambda doc: detailed.detailed_rows(doc, limit=2))
    text = build_report(_run(tmp_path), "html")
    assert "9 of 12 trials are not detailed" in text
    sections = re.findall(r'<section class="trial" id="([^"]+)"', text)
    assert sections == ["trial-t0.base.a.r1", "trial-t1.base.a.r1", "trial-t11.base.a.r1"]
    links = set(re.findall(r'href="#(trial-[^"]+)"', text))
    assert links <= set(sections), links - set(sections)  # no link to a trial the report does not detail


def test_a_timeline_is_svg_with_a_linked_tick_per_event_and_escaped_labels() -> None:
    svg = timeline_svg("timeline-x", [Event(0.0, "tool_call", "ls <x>", "#ev-1"), Event(2.5, "error", "boom & bust"),
                                      Event(5.0, "weird", "?", "#ev-3")])
    assert svg.startswith('<svg class="fig timeline" data-figure="timeline-x"') and svg.endswith("</svg>")
    assert svg.count("<line") == 4  # the axis and three ticks
    assert re.findall(r'<a href="([^"]+)">', svg) == ["#ev-1", "#ev-3"]
    assert "ls &lt;x&gt;" in svg and "boom &amp; bust" in svg and "<x>" not in svg
    assert 'x1="990.0"' in svg  # the last event at the right end
    assert timeline_svg("t", []).count("<line") == 1  # no event: the axis alone, never a crash


@pytest.mark.parametrize("tmax", [0.007, 0.01, 1.0, 2.5, 5.0, 40.0, 1234.5])
def test_no_axis_label_of_a_timeline_reaches_past_its_drawing(tmax: float) -> None:
    """A tick at the very end of the axis (the CI run's 0.007 s) is anchored inside the drawing, as is
    the first; the width of a label is taken generously (0.62 em a character)."""
    from assay.report.timeline_svg import WIDTH

    svg = timeline_svg("t", [Event(0.0, "tool_call", "a"), Event(tmax, "error", "b")])
    labels = re.findall(r'<text x="([\d.]+)" y="[\d.]+" font-size="(\d+)" text-anchor="(\w+)">([^<]*)</text>', svg)
    assert labels, svg
    for x, size, anchor, text in labels:
        width = len(text) * int(size) * 0.62
        left = {"start": float(x), "middle": float(x) - width / 2, "end": float(x) - width}[anchor]
        assert 0.0 <= left and left + width <= WIDTH, (text, anchor, x)


def test_from_a_side_file_only_the_detailed_rows_are_decoded_whole(tmp_path: Path, monkeypatch) -> None:
    """The HTML report of a large run reads only the ids of the rows it does not detail: the same
    rows and total as reading every row whole, a fifth of the decoding for the others."""
    import assay.records.trial_file as trial_file
    from assay.errors import IntegrityError
    from assay.score.engine import scored_to_side_file

    run = _run(tmp_path, n=40)
    (tmp_path / "side").mkdir()
    doc = scored_to_side_file(run, tmp_path / "side")
    inline = score_run(run)
    real = trial_file._DECODER
    whole: list[bytes] = []

    class Counting:
        def decode(self, line: bytes):  # noqa: ANN201 - the decoder's own type
            whole.append(line)
            return real.decode(line)

    monkeypatch.setattr(trial_file, "_DECODER", Counting())
    rows, total = detailed_rows(doc, limit=3)
    assert total == 40 and len(whole) == 4  # three and the linked t39, never the thirty-six others whole
    want, want_total = detailed_rows(inline, limit=3)
    assert (rows, total) == (want, want_total)
    assert [r.trial_id for r in rows] == ["t0.base.a.r1", "t1.base.a.r1", "t2.base.a.r1", "t39.base.a.r1"]
    # a damaged line among those read by id alone is named, never skipped
    side = tmp_path / "side" / "trials.jsonl"
    lines = side.read_bytes().splitlines(keepends=True)
    lines[20] = b'{"row": {"task_id": "t20"}}\n'
    side.write_bytes(b"".join(lines))
    with pytest.raises(IntegrityError, match=r"trials.jsonl:21: not a trial row"):
        detailed_rows(doc, limit=3)


def test_a_json_reports_rows_are_moved_into_place_with_the_writers_digest(tmp_path: Path, monkeypatch) -> None:
    """The score's rows are written in the report's folder and moved beside it, not copied (765 MB
    at 10^6 trials); on another file system they are copied, hashed as copied. Either way the
    report names the digest of the very bytes of its side file."""
    import hashlib

    import assay.report.build as build

    run = _run(tmp_path)

    def no_copy(source: Path, target: Path) -> str:
        raise AssertionError("copied")

    monkeypatch.setattr(build, "_copy_hashed", no_copy)
    path = write_report(run, "json", out=tmp_path / "out" / "r.json")
    side = path.with_name("r.trials.jsonl")
    info = json.loads(path.read_text())["score"]["trials_file"]
    assert info["sha256"] == hashlib.sha256(side.read_bytes()).hexdigest() and info["rows"] == 12
    assert sorted(p.name for p in path.parent.iterdir()) == ["r.json", "r.trials.jsonl"]  # no temporary left
    monkeypatch.undo()

    real = os.replace

    def cross_device(src: object, dst: object) -> None:  # the side file's move only
        if str(dst).endswith(".trials.jsonl"):
            raise OSError(18, "Invalid cross-device link")
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(build.os, "replace", cross_device)
    path = write_report(run, "json", out=tmp_path / "other" / "r.json")
    side = path.with_name("r.trials.jsonl")
    info = json.loads(path.read_text())["score"]["trials_file"]
    assert info["sha256"] == hashlib.sha256(side.read_bytes()).hexdigest() and info["rows"] == 12


def test_a_report_folder_that_takes_no_file_is_a_usage_error_naming_it(tmp_path: Path, monkeypatch) -> None:
    import tempfile

    import assay.report.build as build
    from assay.errors import UsageError

    run = _run(tmp_path)

    def read_only(*a: object, **k: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(build.tempfile, "TemporaryDirectory", read_only)
    with pytest.raises(UsageError, match=r"r\.html: cannot be written \(Read-only file system\); fix: --out"):
        write_report(run, "html", out=tmp_path / "ro" / "r.html")
    monkeypatch.undo()
    assert tempfile.TemporaryDirectory is not read_only
