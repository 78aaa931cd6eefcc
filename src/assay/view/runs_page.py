"""The run list and a run's page (headline, figures, trials; the live panel while it runs)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from assay.view.catalog import RunRow
from assay.view.html import page, pct, shown, usd

#: columns of the run list: key -> (heading, sort key)
COLUMNS: dict[str, tuple[str, Any]] = {
    "date": ("date", lambda r: r.created_at),
    "suite": ("suite", lambda r: r.suite),
    "name": ("run", lambda r: r.name),
    "status": ("status", lambda r: r.status),
    "strict": ("strict rate", lambda r: -1.0 if r.strict_rate is None else r.strict_rate),
    "gate": ("security gate", lambda r: r.gate),
    "cost": ("cost", lambda r: -1.0 if r.cost_usd is None else r.cost_usd),
}
TRIALS_PER_PAGE = 200


def _date(ts: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ts)) if ts else "—"


def run_list(rows: list[RunRow], *, q: str = "", sort: str = "date", desc: bool = True, status: str = "") -> str:
    """Every run, filtered by ``q`` (suite, run, agent) and ``status``, sorted by a column."""
    if q:
        needle = q.lower()
        rows = [r for r in rows if needle in r.suite.lower() or needle in r.name.lower()
                or any(needle in a.name.lower() for a in r.agents)]
    if status:
        rows = [r for r in rows if r.status == status]
    key = COLUMNS.get(sort, COLUMNS["date"])[1]
    rows = sorted(rows, key=key, reverse=desc)
    head = "".join(
        f"<th><a href='/?{urlencode({'q': q, 'status': status, 'sort': k, 'desc': int(not desc if k == sort else 1)})}'>"
        f"{h}{(' ▼' if desc else ' ▲') if k == sort else ''}</a></th>" for k, (h, _) in COLUMNS.items())
    body = []
    for r in rows:
        href = f"/run/{quote(r.name)}"
        if r.status in ("tampered", "unreadable"):
            what = ("files: " + ", ".join(r.tampered_files)) if r.tampered_files else "; ".join(r.problems)
            body.append(f"<tr class='{r.status}' data-run='{shown(r.name)}'><td>—</td><td>{shown(r.suite) or '—'}</td>"
                        f"<td><a href='{href}'>{shown(r.name)}</a></td><td class='{r.status}'>{r.status.upper()}</td>"
                        f"<td colspan='3' class='txt'>{shown(what)}</td></tr>")
            continue
        agents = "<br>".join(f"{shown(a.name)}: {pct(a.strict_rate)} <span class='{a.gate}'>{a.gate}</span>"
                             for a in r.agents)
        body.append(f"<tr data-run='{shown(r.name)}'{VERIFYING_ROW if r.verifying else ''}><td>{_date(r.created_at)}</td>"
                    f"<td>{shown(r.suite)}</td><td><a href='{href}'>{shown(r.name)}</a></td>"
                    f"<td class='st'>{r.status}{VERIFYING if r.verifying else ''}</td><td>{agents}</td>"
                    f"<td class='{r.gate}'>{r.gate or '—'}</td><td>{usd(r.cost_usd)}</td></tr>")
    form = (f"<form method='get' action='/'><input name='q' value='{shown(q)}' placeholder='suite, run or agent'>"
            f"<select name='status'><option value=''>any status</option>"
            + "".join(f"<option{' selected' if s == status else ''}>{s}</option>"
                      for s in ("running", "scored", "not scored", "tampered", "unreadable"))
            + f"</select><input type='hidden' name='sort' value='{shown(sort)}'><button>filter</button></form>")
    table = f"<table id='runs'><tr>{head}</tr>{''.join(body)}</table>"
    checking = sum(r.verifying for r in rows)
    note = (f"<p id='verifying-note' class='warn'>{checking} run(s) verifying…: their numbers are their sealed score "
            "versions', checked against the ledger; every other file is being verified now, and a run that fails "
            "turns TAMPERED here</p>") if checking else ""
    return page("assay runs", f"<h1>Runs</h1>{form}<p>{len(rows)} run(s)</p>{note}{table}",
                script=VERIFY_JS if checking else "")


VERIFYING = " <span class='verifying warn'>verifying…</span>"
VERIFYING_ROW = " class='verifying'"

#: while rows are verifying: ask the viewer which still are; a row done is marked verified in place,
#: a row found tampered reloads the page (its numbers go)
VERIFY_JS = r"""
(function(){
function tick(){fetch('/verifying').then(r=>r.json()).then(function(st){
 const pending=new Set(st.pending), bad=new Set(st.tampered); let left=0, reload=false;
 document.querySelectorAll('tr.verifying').forEach(function(tr){const n=tr.dataset.run;
  if(bad.has(n)){reload=true;} else if(!pending.has(n)){tr.classList.remove('verifying');
   const s=tr.querySelector('span.verifying'); if(s){s.remove();}} else {left++;}});
 if(reload){location.reload();return;}
 const note=document.getElementById('verifying-note'); const page=document.getElementById('verifying-page');
 if(page&&!pending.has(page.dataset.run)){location.reload();return;}
 if(note){note.textContent=left? left+' run(s) verifying…': 'every run shown is verified';}
 if(left||(page&&pending.has(page.dataset.run))){setTimeout(tick,500);}
}).catch(function(){setTimeout(tick,2000);});}
tick();
})();
"""


#: figures not drawn yet: the page asks for them once and puts them in place (the viewer's own SVG)
FIGURES_JS = r"""
(function(){const box=document.getElementById('figs'); if(!box){return;}
fetch(box.dataset.src).then(r=>r.ok?r.text():Promise.reject(r.status)).then(function(html){box.outerHTML=html;})
 .catch(function(e){box.textContent='the figures could not be drawn ('+e+')';});})();
"""


def verifying_banner(row: RunRow) -> str:
    """A run page's note while its full verification is still to come."""
    return (f"<p id='verifying-page' data-run='{shown(row.name)}' class='warn'>verifying…: these numbers are the "
            "sealed score version's, checked against the ledger; the run's other files are being verified now "
            "(this page reloads when that is done)</p>")


def tampered(row: RunRow, csrf: str) -> str:
    files = "".join(f"<li class='txt'>{shown(f)}</li>" for f in row.tampered_files)
    probs = "".join(f"<li class='txt'>{shown(p)}</li>" for p in row.problems)
    return page(f"{row.name}: tampered", f"<h1 class='tampered'>{shown(row.name)}: TAMPERED</h1>"
                "<p>This run directory fails verification: its numbers are not shown. Files named:</p>"
                f"<ul id='tampered-files'>{files}</ul><details><summary>what `assay verify` says</summary><ul>{probs}</ul>"
                f"</details>{_verify_button(row.name, csrf)}")


def _verify_button(name: str, csrf: str) -> str:
    return (f"<form method='post' action='/run/{quote(name)}/verify' class='inline'>"
            f"<input type='hidden' name='csrf' value='{csrf}'><button>verify again</button></form>")


def ctl_buttons(name: str, csrf: str) -> str:
    def btn(verb: str) -> str:
        return (f"<form method='post' action='/run/{quote(name)}/ctl' class='inline'><input type='hidden' name='csrf' "
                f"value='{csrf}'><input type='hidden' name='verb' value='{verb}'><button id='ctl-{verb}'>{verb}</button>"
                "</form>")
    jobs = (f"<form method='post' action='/run/{quote(name)}/ctl' class='inline'><input type='hidden' name='csrf' "
            f"value='{csrf}'><input type='hidden' name='verb' value='jobs'><input name='n' id='ctl-n' size='3'>"
            "<button id='ctl-jobs'>jobs</button></form>")
    return "<div id='ctl'>" + "".join(btn(v) for v in ("pause", "resume", "requeue-infra", "stop")) + jobs + "</div>"


def figures_html(figures: list[str]) -> str:
    return "<div class='figs'>" + "".join(f"<div>{f}</div>" for f in figures) + "</div>"


def run_page(row: RunRow, figures: list[str] | None, trials: list[Any], total: int, *, running: bool, csrf: str,
             offset: int = 0) -> str:
    name = quote(row.name)
    out = [f"<h1>{shown(row.name)}</h1><p>suite {shown(row.suite)} · {row.planned} planned trial(s) · "
           f"status <b id='status'>{row.status}</b>{' · score version ' + str(row.score_version) if row.score_version else ''}"
           f" · <a href='/run/{name}/audit'>audit queue ({row.suspects})</a> {_verify_button(row.name, csrf)}</p>"]
    if row.verifying:
        out.append(verifying_banner(row))
    if running:
        out.append("<h2>Live</h2>" + ctl_buttons(row.name, csrf) + LIVE_PANEL)
    if not row.score_version:
        out.append("<p>not scored yet (<code>assay score RUN</code>)</p>")
    else:
        out.append("<h2>Headline</h2><table id='headline'><tr><th>agent</th><th>strict rate</th><th>95 % CI</th>"
                   "<th>security gate</th><th>cost</th></tr>")
        for a in row.agents:
            lo, hi = (a.ci + [None, None])[:2]
            out.append(f"<tr><td>{shown(a.name)}</td><td>{pct(a.strict_rate)}</td><td>{pct(lo)} – {pct(hi)}</td>"
                       f"<td class='{a.gate}'>{a.gate}</td><td>{usd(a.cost_usd)}</td></tr>")
        out.append("</table><h2>Figures</h2>" + (figures_html(figures) if figures is not None else
                   f"<div class='figs' id='figs' data-src='/run/{name}/figures'><p class='dim'>drawing figures…</p></div>"))
    if total:
        out.append(f"<h2>Trials</h2><p>{offset + 1}–{offset + len(trials)} of {total}"
                   + (f" · <a href='/run/{name}?offset={offset + TRIALS_PER_PAGE}'>next</a>"
                      if offset + TRIALS_PER_PAGE < total else "") + "</p>")
        out.append("<table id='trials'><tr><th>trial</th><th>agent</th><th>category</th><th>end state</th>"
                   "<th>attempts</th></tr>")
        for t in trials:
            out.append(f"<tr><td><a href='/run/{name}/trial/{quote(t.trial_id)}'>{shown(t.trial_id)}</a></td>"
                       f"<td>{shown(t.agent)}</td><td>{shown(t.category)}</td><td class='{shown(t.end_state)}'>"
                       f"{shown(t.end_state)}</td><td>{t.attempts}</td></tr>")
        out.append("</table>")
    script = LIVE_JS % {"name": name} if running else VERIFY_JS if row.verifying else ""
    return page(row.name, "".join(out), script=script + (FIGURES_JS if figures is None else ""))


LIVE_PANEL = ("<p id='live-state' class='dim'>connecting…</p><table id='live-counts'></table>"
              "<h3>In flight</h3><ul id='in-flight'></ul><p id='backoff'></p><p id='budget'></p>"
              "<h3>Changes</h3><ul id='changes'></ul>")

#: the live panel's script: the runner's event stream as server-sent events, shown as it comes
LIVE_JS = r"""
(function(){
const counts={}, flight={};
function txt(s){const d=document.createElement('span');d.textContent=String(s);return d.innerHTML.replace(/"/g,'&quot;').replace(/'/g,'&#39;');}
function draw(st){
 if(st){document.getElementById('live-state').textContent=(st.stopped?'stopping':st.paused?'paused':'running')
   +' · jobs '+st.jobs+' · in flight '+Object.keys(flight).length+' · pending '+st.pending+' of '+st.planned;}
 let rows='<tr><th>agent</th><th>category</th><th>pass</th><th>fail</th><th>timeout</th><th>infra_error</th><th>skipped</th></tr>';
 for(const a of Object.keys(counts).sort()) for(const c of Object.keys(counts[a]).sort()){const k=counts[a][c];
  rows+='<tr data-agent="'+txt(a)+'" data-category="'+txt(c)+'"><td>'+txt(a)+'</td><td>'+txt(c)+'</td>'+
   ['pass','fail','timeout','infra_error','skipped'].map(s=>'<td class="'+s+'">'+(k[s]||0)+'</td>').join('')+'</tr>';}
 document.getElementById('live-counts').innerHTML=rows;
 document.getElementById('in-flight').innerHTML=Object.keys(flight).sort().map(t=>'<li>'+txt(t)+' attempt '+flight[t]+'</li>').join('');
}
function backoff(model,b){const until=new Date(1000*b.until).toLocaleTimeString();
 document.getElementById('backoff').textContent='backing off: '+model+' (HTTP '+b.status+') until '+until;}
function budget(b){const l=b.limits||{}, s=b.spent||{};
 document.getElementById('budget').textContent='run budget: spent $'+s.cost_usd+(l.max_cost_usd?' of $'+l.max_cost_usd:'')+
  ', '+s.tokens+(l.max_tokens?' of '+l.max_tokens:'')+' tokens'+(b.reached?' · REACHED '+b.reached+': no new attempt starts':'');}
let state=null;
const es=new EventSource('/run/%(name)s/events');
es.onmessage=function(m){const e=JSON.parse(m.data);
 if(e.type==='state'){state=e;for(const a in e.finished){counts[a]=e.finished[a];}
   for(const t in e.in_flight_trials){flight[t]=e.in_flight_trials[t].attempt;}
   if(e.budget){budget(e.budget);} for(const mo in (e.backoff||{})){backoff(mo,e.backoff[mo]);}}
 else if(e.type==='attempt_started'){flight[e.trial_id]=e.attempt;}
 else if(e.type==='attempt_finished'){delete flight[e.trial_id];
   if(e.final){const a=(counts[e.agent]=counts[e.agent]||{});const c=(a[e.category]=a[e.category]||{});
     c[e.end_state]=(c[e.end_state]||0)+1; if(state) state.pending=Math.max(0,state.pending-1);}}
 else if(e.type==='control'){const li=document.createElement('li');li.textContent=e.command+' by '+e.who;
   document.getElementById('changes').appendChild(li);
   if(state){if(e.after.paused!==undefined)state.paused=e.after.paused;if(e.after.jobs)state.jobs=e.after.jobs;
     if(e.after.stopped)state.stopped=true;}}
 else if(e.type==='backoff'){backoff(e.model,e);}
 else if(e.type==='budget'){budget(e);}
 else if(e.type==='ended'){document.getElementById('status').textContent='ended';es.close();state=null;
   document.getElementById('live-state').textContent='the run ended';}
 draw(state);};
})();
"""
