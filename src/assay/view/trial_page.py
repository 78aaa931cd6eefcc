"""A trial's page (the report's trial section: predicates with what each read and its trust level,
the trace timeline; plus the agent's output, the workspace diff, screenshots), the comparison of
two runs, and the audit queue."""

from __future__ import annotations

import difflib
from urllib.parse import quote

from assay.records.comparison import Comparison
from assay.records.results import AttemptResult
from assay.records.scores import ScoreDocument, TrialScore
from assay.report.browser import report_shots
from assay.report.trials import trial_section
from assay.score.screen import Suspect
from assay.store.rundir import RunDir
from assay.store.workspace_diff import ARTIFACT_NAME, read_workspace_diff
from assay.view.html import page, pct, shown

#: artifacts shown as text on the trial page (agent output), at most this many bytes each
TEXT_BYTES = 256 * 1024
PNG = b"\x89PNG\r\n\x1a\n"


def _text(data: bytes) -> str | None:
    if b"\x00" in data[:TEXT_BYTES]:
        return None
    return data[:TEXT_BYTES].decode("utf-8", errors="replace")


def _diff(rd: RunDir, res: AttemptResult) -> str:
    digest = res.artifacts.get(ARTIFACT_NAME)
    if digest is None:
        return "<p class='dim'>no workspace diff kept for this attempt</p>"
    try:
        diff = read_workspace_diff(rd.read_artifact(digest))
    except Exception as e:  # noqa: BLE001 - a damaged artifact is named, never a 500
        return f"<p class='bad'>the workspace diff cannot be read: {shown(type(e).__name__)}</p>"
    out = ["<table class='diff'><tr><th>status</th><th>path</th></tr>"]
    out += [f"<tr><td>{shown(e['status'])}</td><td class='txt'>{shown(e['path'])}</td></tr>" for e in diff.entries]
    out.append("</table>" + ("<p class='warn'>truncated</p>" if diff.truncated else ""))
    for e in diff.entries[:200]:
        after, before = diff.content(e, "after"), diff.content(e, "before")
        a, b = (_text(after) if after is not None else None), (_text(before) if before is not None else None)
        if a is not None and b is not None:
            lines = "\n".join(difflib.unified_diff(b.splitlines(), a.splitlines(), "before", "after", lineterm=""))
        elif a is not None:
            lines = a
        else:
            continue
        out.append(f"<details><summary class='txt'>{shown(e['status'])} {shown(e['path'])}</summary>"
                   f"<pre>{shown(lines)}</pre></details>")
    return "".join(out)


def _artifacts(rd: RunDir, name: str, res: AttemptResult, *, in_section: bool) -> str:
    """Each artifact of the attempt: screenshots as images (those the report's section already
    shows, when it is on the page, not twice), text as text, the rest by size."""
    out = []
    skip = set(report_shots(res)) if in_section else set()
    for art, digest in sorted(res.artifacts.items()):
        if art == ARTIFACT_NAME or art in skip:
            continue
        try:
            data = rd.read_artifact(digest)
        except OSError:
            out.append(f"<p class='bad'>{shown(art)}: missing</p>")
            continue
        if data.startswith(PNG):
            out.append(f"<figure><img alt='{shown(art)}' style='max-width:100%' "
                       f"src='/run/{quote(name)}/artifact/{digest}'><figcaption>{shown(art)}</figcaption></figure>")
            continue
        text = _text(data)
        body = f"<pre>{shown(text)}</pre>" if text is not None else f"<p>binary, {len(data)} bytes</p>"
        cut = f"<p class='warn'>first {TEXT_BYTES} bytes of {len(data)}</p>" if len(data) > TEXT_BYTES else ""
        out.append(f"<details class='artifact' data-name='{shown(art)}'><summary>{shown(art)}</summary>{body}{cut}</details>")
    return "".join(out)


def trial_page(rd: RunDir, name: str, trial_id: str, row: TrialScore | None) -> str:
    out = [f"<h1 class='txt'>{shown(trial_id)}</h1><p><a href='/run/{quote(name)}'>run {shown(name)}</a></p>"]
    if row is not None:
        out.append(trial_section(rd, row))  # the static report's own section: one function for both
    for n in rd.attempts_of(trial_id):
        res = rd.result(trial_id, n)
        if res is None:
            out.append(f"<h2>attempt {n}</h2><p>in flight (started, no result yet)</p>")
            continue
        out.append(f"<h2>attempt {n}: <span class='{res.end_state.value}'>{res.end_state.value}</span></h2>")
        if row is None:
            out.append("<table><tr><th>predicate</th><th>kind</th><th>trust</th><th>held</th><th>evidence</th></tr>" + "".join(
                f"<tr><td>{shown(p.id)}</td><td>{shown(p.kind)}</td><td>{shown(p.trust.value if p.trust else 'unknown')}"
                f"</td><td>{p.passed}</td><td><pre>{shown(p.evidence)}</pre></td></tr>" for p in res.predicates) + "</table>")
        out.append("<h3>workspace diff</h3>" + _diff(rd, res))
        out.append("<h3>output and evidence files</h3>" + _artifacts(rd, name, res, in_section=row is not None))
    return page(trial_id, "".join(out))


def compare_page(names: list[str], a: str, b: str, cmp: Comparison | None, docs: tuple[ScoreDocument, ScoreDocument] | None,
                 problem: str = "", section: str = "") -> str:
    opts = lambda sel: "".join(f"<option{' selected' if n == sel else ''}>{shown(n)}</option>" for n in names)  # noqa: E731
    out = [f"<h1>Compare two runs</h1><form method='get' action='/compare'>baseline <select name='a'>{opts(a)}</select> "
           f"candidate <select name='b'>{opts(b)}</select> <button>compare</button></form>"]
    if problem:
        out.append(f"<p class='bad'>{shown(problem)}</p>")
    if cmp is not None and docs is not None:
        flips = "".join(f"<tr class='{f.direction}'><td>{shown(f.task)}</td><td>{shown(f.variant)}</td><td>{shown(f.agent)}"
                        f"</td><td>{pct(f.baseline)}</td><td>{pct(f.candidate)}</td><td class='{'bad' if f.direction == 'regressed' else 'ok'}'>"
                        f"{f.direction}</td></tr>" for f in cmp.flipped)
        out.append("<h2>Flipped</h2><table id='flipped'><tr><th>task</th><th>variant</th><th>agent</th><th>baseline</th>"
                   f"<th>candidate</th><th></th></tr>{flips}</table>")
        out.append("<h2>Gates</h2><table id='gates'><tr><th>run</th><th>security gate</th></tr>" + "".join(
            f"<tr><td>{shown(n)}</td><td class='{d.security.gate}'>{d.security.gate}</td></tr>" for n, d in zip((a, b), docs))
            + "</table>" + section)
    return page("compare", "".join(out))


def audit_page(name: str, suspects: list[Suspect], labels: dict[str, dict], csrf: str, version: int | None,
               message: str = "") -> str:
    out = [f"<h1>Audit queue: {shown(name)}</h1><p><a href='/run/{quote(name)}'>back to the run</a> · "
           f"score version <b id='score-version'>{version if version is not None else 'none'}</b></p>"]
    if message:
        out.append(f"<p id='audit-message'>{shown(message)}</p>")
    if not suspects:
        out.append("<p>no suspect pass: the reward-hack screen flagged nothing</p>")
    for s in suspects:
        lab = labels.get(s.trial_id)
        flags = "".join(f"<li class='txt'>{shown(f.rule)}: {shown(f.path)}: {shown(f.detail)}</li>" for f in s.flags)
        out.append(f"<section class='suspect' data-trial='{shown(s.trial_id)}'><h2 class='txt'>{shown(s.trial_id)}</h2>"
                   f"<p>{shown(s.agent)} on {shown(s.task_id)}, attempt {s.attempt}; label: "
                   f"<b class='label'>{shown(lab['label']) if lab else 'none'}</b>"
                   f"{' by ' + shown(lab['labelled_by']) if lab else ''}</p><ul>{flags}</ul>"
                   f"<form method='post' action='/run/{quote(name)}/audit'><input type='hidden' name='csrf' value='{csrf}'>"
                   f"<input type='hidden' name='trial' value='{shown(s.trial_id)}'>by <input name='by' required> "
                   "<button name='label' value='true'>true pass</button><button name='label' value='false'>false pass</button>"
                   "</form></section>")
    return page(f"audit {name}", "".join(out))
