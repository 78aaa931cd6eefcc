"""The viewer's route handlers: each reads what it shows through the catalog, the score versions
and the run directory's own readers, and renders through runs_page / trial_page."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)

from assay.errors import AssayError
from assay.records.scores import ScoreDocument
from assay.records.trial_file import iter_trials
from assay.score.versions import read_score, score_files
from assay.store.rundir import INDEX, REPORTS, RunDir
from assay.view import live
from assay.spec.digest import sha256_bytes
from assay.view.catalog import RunRow, tampered_files, trial_problems
from assay.view.html import page, shown
from assay.view.runs_page import figures_html, run_list, run_page, tampered, verifying_banner
from assay.view.trial_list import trial_rows, trial_rows_of
from assay.view.trial_page import PNG, audit_page, compare_page, trial_page

_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def problem(text: str) -> str:
    return page("problem", f"<h1>Cannot show this</h1><p class='bad txt'>{shown(text)}</p>")


def _who(request: Request) -> str:
    return f"viewer ({request.client.host if request.client else '?'})"


def _row(viewer: Any, request: Request) -> tuple[RunRow | None, Response | None]:
    row = viewer.catalog.row(request.path_params["name"], urgent=True)
    if row is None:
        return None, HTMLResponse(problem("no such run under this viewer's folder"), 404)
    if row.status == "tampered":
        return row, HTMLResponse(tampered(row, viewer.csrf))
    if row.status == "unreadable":
        return row, HTMLResponse(problem(f"{row.name}: " + "; ".join(row.problems)))
    return row, None


def _latest(viewer: Any, row: RunRow) -> ScoreDocument | None:
    """The run's latest score version, parsed once per viewer (a score file is never rewritten)."""
    path = viewer.catalog.run_path(row.name)
    files = score_files(path) if path is not None else []
    if not files:
        return None
    key = str(files[-1])
    if key not in viewer.docs:
        viewer.docs.clear()  # one big document at a time is kept
        viewer.docs[key] = read_score(files[-1])
    return viewer.docs[key]


def _figures(viewer: Any, row: RunRow, *, draw: bool = True) -> list[str] | None:
    """The static report's figures of the latest score version (one function per figure, shared),
    drawn once and kept beside the run's reports (derived: delete at will); None when they are not
    drawn yet and ``draw`` is off (the page asks for them separately: drawing takes a second)."""
    path = viewer.catalog.run_path(row.name)
    key = (row.name, row.score_version)
    if key in viewer.figures:
        return viewer.figures[key]
    kept = path / REPORTS / f"view-figures-{row.score_version:04d}.json" if path and row.score_version else None
    try:
        figs = json.loads(kept.read_text()) if kept is not None else None
    except (OSError, ValueError):
        figs = None
    if not isinstance(figs, list):
        if not draw:
            return None
        doc = _latest(viewer, row)
        if doc is None:
            return []
        from assay.report.html import figures

        figs = figures(doc)
        if kept is not None:
            try:
                kept.parent.mkdir(exist_ok=True)
                kept.write_text(json.dumps(figs))
            except OSError:
                pass
    viewer.figures[key] = figs
    return figs


async def runs(viewer: Any, request: Request) -> Response:
    q = request.query_params
    return HTMLResponse(run_list(viewer.catalog.rows(), q=q.get("q", ""), sort=q.get("sort", "date"),
                                 desc=q.get("desc", "1") != "0", status=q.get("status", "")))


async def run(viewer: Any, request: Request) -> Response:
    row, refused = _row(viewer, request)
    if refused is not None:
        return refused
    assert row is not None
    try:
        offset = max(0, int(request.query_params.get("offset", "0")))
    except ValueError:
        offset = 0
    figs = _figures(viewer, row, draw=False) if row.score_version else []
    path = viewer.catalog.run_path(row.name)
    if (path / INDEX).is_file():  # the derived index answers a page of trials without the score document
        trials, total = trial_rows(path, offset)
    else:
        doc = _latest(viewer, row)
        trials, total = trial_rows_of(doc, offset)
    return HTMLResponse(run_page(row, figs, trials, total, running=row.status == "running", csrf=viewer.csrf,
                                 offset=offset))


async def verifying(viewer: Any, request: Request) -> Response:
    """Which runs are still being verified in the background, and which it found tampered."""
    return JSONResponse({"pending": viewer.catalog.pending(), "tampered": sorted(viewer.catalog.found_tampered)})


async def figures(viewer: Any, request: Request) -> Response:
    """The run's figures as a fragment of its page (drawn off the event loop the first time)."""
    row, refused = _row(viewer, request)
    if refused is not None:
        return refused
    assert row is not None
    figs = await run_in_threadpool(_figures, viewer, row) if row.score_version else []
    return HTMLResponse(figures_html(figs or []))


async def verify(viewer: Any, request: Request) -> Response:
    viewer.catalog.refresh(request.path_params["name"])
    return RedirectResponse(f"/run/{request.path_params['name']}", 303)


async def ctl(viewer: Any, request: Request) -> Response:
    row, refused = _row(viewer, request)
    if refused is not None:
        return refused
    form = request.state.form
    verb = str(form.get("verb", ""))
    args: dict[str, Any] = {}
    if verb == "jobs":
        try:
            args["n"] = int(str(form.get("n", "")))
        except ValueError:
            return HTMLResponse(problem("jobs needs a whole number"), 400)
    answer = await live.request(viewer.catalog.run_path(row.name), verb, _who(request), **args)  # type: ignore[arg-type]
    if not answer.get("ok"):
        return HTMLResponse(problem(f"the runner refused {verb}: {answer.get('error')}"), 409)
    return RedirectResponse(f"/run/{request.path_params['name']}", 303)


async def trial(viewer: Any, request: Request) -> Response:
    row, refused = _row(viewer, request)
    if refused is not None:
        return refused
    assert row is not None
    tid = request.path_params["trial_id"]
    rd = RunDir.open(viewer.catalog.run_path(row.name))
    if tid not in rd.manifest().plan.trials:
        return HTMLResponse(problem("no such trial in this run's plan"), 404)
    if row.verifying and (bad := trial_problems(rd, tid)):  # its run is not verified yet: this trial is, now
        return HTMLResponse(tampered(replace(row, status="tampered", problems=bad, tampered_files=tampered_files(bad)),
                                     viewer.csrf))
    doc = _latest(viewer, row)
    score_row = next((t for t in iter_trials(doc) if t.trial_id == tid), None) if doc is not None else None
    html = trial_page(rd, row.name, tid, score_row)
    return HTMLResponse(html.replace("<h1", verifying_banner(row) + "<h1", 1) if row.verifying else html)


async def artifact(viewer: Any, request: Request) -> Response:
    """A screenshot named by a result, as an image (nothing else is served raw)."""
    row, refused = _row(viewer, request)
    if refused is not None:
        return refused
    digest = request.path_params["digest"]
    if not _DIGEST.match(digest):
        return PlainTextResponse("not a digest", 404)
    rd = RunDir.open(viewer.catalog.run_path(row.name))  # type: ignore[union-attr]
    try:
        data = rd.read_artifact(digest)
    except OSError:
        return PlainTextResponse("no such artifact", 404)
    if not data.startswith(PNG) or sha256_bytes(data) != digest:
        return PlainTextResponse("only screenshots are served", 404)
    return Response(data, media_type="image/png")


async def compare(viewer: Any, request: Request) -> Response:
    from assay.report.html import _compare
    from assay.score.compare import compare_scores

    names = viewer.catalog.names()
    a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
    if not (a and b):
        return HTMLResponse(compare_page(names, a, b, None, None))
    rows = [viewer.catalog.row(n) for n in (a, b)]
    rows = [viewer.catalog.refresh(r.name) if r is not None and r.verifying else r for r in rows]  # verified first
    bad = [f"{n}: {r.status if r else 'no such run'}" for n, r in zip((a, b), rows)
           if r is None or r.status in ("tampered", "unreadable")]
    if bad:
        return HTMLResponse(compare_page(names, a, b, None, None, problem="cannot compare: " + "; ".join(bad)))
    docs = [_latest(viewer, r) for r in rows if r is not None]
    if any(d is None for d in docs):
        return HTMLResponse(compare_page(names, a, b, None, None, problem="both runs need a score version (assay score)"))
    base, cand = docs  # type: ignore[misc]
    try:
        cmp = compare_scores(base, cand)
    except AssayError as e:
        return HTMLResponse(compare_page(names, a, b, None, None, problem=str(e)))
    return HTMLResponse(compare_page(names, a, b, cmp, (base, cand), section=_compare(cmp)))  # type: ignore[arg-type]


async def audit(viewer: Any, request: Request) -> Response:
    from assay.score.audit_labels import label_suspects
    from assay.score.labels import read_labels
    from assay.score.trial_sight import screen_scanned

    row, refused = _row(viewer, request)
    if refused is not None:
        return refused
    assert row is not None
    path = viewer.catalog.run_path(row.name)
    message = ""
    if request.method == "POST":
        form = request.state.form
        label = str(form.get("label", ""))
        if label not in ("true", "false"):
            return HTMLResponse(problem("a label is true or false"), 400)
        _, version = label_suspects(path, {str(form.get("trial", "")): label == "true"}, by=str(form.get("by", "")))
        message = f"label recorded; new score version {version.name}"
        row = viewer.catalog.refresh(row.name) or row
    suspects = screen_scanned(RunDir.open(path))
    files = score_files(path)
    version = read_score(files[-1]).score_version if files else None
    return HTMLResponse(audit_page(row.name, suspects, read_labels(path), viewer.csrf, version, message))
