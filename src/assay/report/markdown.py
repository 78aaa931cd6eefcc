"""The Markdown report: the same headline, per-category and security facts as the HTML, as text."""

from __future__ import annotations

from typing import Any


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _num(v: float | None, fmt: str = ".4g") -> str:
    return "n/a" if v is None else format(v, fmt)


def _asr(m: dict[str, Any]) -> str:
    at = m.get("attack") or {}
    return f"{_pct(at['success_rate'])} ({at['succeeded']}/{at['injected']})" if at.get("injected") else "n/a"


def _attack_lines(m: dict[str, Any]) -> list[str]:
    at = m.get("attack") or {}
    if not at.get("injected"):
        return []
    return [f"Prompt injection: {at['injected']} attacked trial(s), attack success rate {_pct(at['success_rate'])}, "
            f"utility under attack {_pct(at['utility_under_attack'])}, utility without attack {_pct(at.get('utility'))}.", ""]


def render_markdown(doc: dict[str, Any], cmp: dict[str, Any] | None = None) -> str:
    out: list[str] = []
    if doc["isolation"].get("warning"):
        out += [f"> **{doc['isolation']['warning']}**", ""]
    out += [f"# assay report: run {doc['run_id']}", "",
            f"scorer {doc['scorer_version']}, rules `{doc['rules_digest'][:12]}`, "
            f"{len(doc['inputs']['results'])} result files read. Run security gate: **{doc['security']['gate']}**", "",
            "| agent | capability | security gate | strict (95% CI) | safe | danger | attack success | availability | cost/success "
            "| tokens/success | tool calls/success | interventions/success | P50/P95 s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for a, m in sorted(doc["agents"].items()):
        e = m["efficiency"]
        out.append(f"| {a} | {_num(m['capability']['score'], '.1f')} | {m['security']['gate']} | {_pct(m['strict_rate'])} "
                   f"[{_pct(m['strict_ci'][0])}, {_pct(m['strict_ci'][1])}] | {_pct(m['safe_rate'])} | {m['danger']} "
                   f"| {_asr(m)} "
                   f"| {_pct(m['availability']['rate'])} | {_num(e['cost_per_success_usd'])} | {_num(e['tokens_per_success'], '.6g')} "
                   f"| {_num(e['tool_calls_per_success'])} | {_num(e['interventions_per_success'])} "
                   f"| {_num(e['wall_p50_s'])} / {_num(e['wall_p95_s'])} |")
    for a, m in sorted(doc["agents"].items()):
        cap = m["capability"]
        out += ["", f"## {a}", "",
                f"Capability {_num(cap['score'], '.1f')}: " + ", ".join(
                    f"{k} {_num(v, '.1f')} (w {cap['weights'][k]})" for k, v in cap["components"].items())
                + (f"; no evidence for {', '.join(cap['missing'])}" if cap["missing"] else ""),
                "", f"pass@1 (first repetition) {_pct(m['pass1'])}; "
                + "; ".join(f"pass^{k} {_pct(v)}" for k, v in m["pass_hat_k"].items()) + "; "
                + "; ".join(f"pass@{k} {_pct(v)}" for k, v in m["pass_at_k"].items()),
                "", f"Trials {m['trials']}, skipped {m['skipped']}, infra errors {m['availability']['infra_trials']}, "
                f"retried {m['availability']['retried_trials']}, recovery {m['recovery']['recovered']}/"
                f"{m['recovery']['fault_trials']}, cleanup failures {m['cleanup_failures']}.", "",
                *_attack_lines(m),
                "| category | weight | strict | 95% CI | std across reps | pass@1 | safe | danger |",
                "|---|---|---|---|---|---|---|---|"]
        for c, cm in m["categories"].items():
            out.append(f"| {c} | {cm['weight']:.3f} | {cm['passes']}/{cm['n']} | [{_pct(cm['strict_ci'][0])}, "
                       f"{_pct(cm['strict_ci'][1])}] | {_num(cm['std_across_repetitions'])} | {_pct(cm['pass1'])} "
                       f"| {_pct(cm['safe_rate'])} | {cm['danger']} |")
    g = doc["security"]
    out += ["", f"## Security gate: {g['gate']}", ""]
    for i in g["incidents"]:
        out.append(f"- FAIL {i.get('trial_id')} attempt {i.get('attempt', '')}: {i.get('type')} ({i.get('severity')}) "
                   f"{i.get('summary', '')}")
    for i in g["warnings"]:
        out.append(f"- warning {i.get('trial_id')}: {i.get('type')} ({i.get('severity')}) {i.get('summary', '')}")
    if not g["incidents"] and not g["warnings"]:
        out.append("No incidents recorded.")
    if cmp is not None:
        out += ["", f"## Compare {cmp['baseline']['run_id']} -> {cmp['candidate']['run_id']}", "",
                f"{cmp['shared_units']} shared units, {len(cmp['left_out'])} left out. {cmp['method']['interval']}.", "",
                "| metric | baseline | candidate | delta | 95% CI | p (sign) | beyond noise |", "|---|---|---|---|---|---|---|"]
        for name, m in cmp["metrics"].items():
            ci = m["ci"]
            out.append(f"| {name} | {_num(m['baseline'])} | {_num(m['candidate'])} | "
                       f"{'n/a' if m['delta'] is None else format(m['delta'], '+.4g')} | "
                       f"{'n/a' if ci is None else f'[{ci[0]:+.3g}, {ci[1]:+.3g}]'} | {m['p_sign_test']:.3g} | "
                       f"{m['direction'] or 'no'} |")
        for x in cmp["left_out"]:
            out.append(f"- left out: {x['agent']} {x['task']} {x['variant']} ({x['why']})")
        if cmp["failed"]:
            out.append(f"\n**CI gate FAILED**: {'; '.join(cmp['failed'])}")
    return "\n".join(out) + "\n"


def render_summary(doc: dict[str, Any]) -> str:
    """A few lines for the terminal: the isolation warning first, then one headline per agent."""
    out = []
    if doc["isolation"].get("warning"):
        out.append(f"WARNING {doc['isolation']['warning']}")
    for a, m in sorted(doc["agents"].items()):
        e = m["efficiency"]
        out.append(f"{a}: capability {_num(m['capability']['score'], '.1f')}, security gate {m['security']['gate']}"
                   f" ({len(m['security']['incidents'])} incident(s)); strict {_pct(m['strict_rate'])} "
                   f"[{_pct(m['strict_ci'][0])}, {_pct(m['strict_ci'][1])}] over {m['scored']} trial(s), "
                   f"availability {_pct(m['availability']['rate'])}; cost/success {_num(e['cost_per_success_usd'])}, "
                   f"P95 {_num(e['wall_p95_s'])} s")
    out.append(f"run security gate: {doc['security']['gate']}")
    return "\n".join(out)


def render_compare(cmp: dict[str, Any]) -> str:
    """The comparison as terminal text (the Markdown table plus the verdict)."""
    out = [f"note: {n}" for n in cmp["notes"]]
    out.append(f"compare {cmp['baseline']['run_id']} -> {cmp['candidate']['run_id']}: {cmp['shared_units']} shared "
               f"unit(s), {len(cmp['left_out'])} left out; agents {cmp['agent_pairs']}")
    for scope, metrics in [("all agents", cmp["metrics"]), *cmp["by_agent"].items()]:
        out.append(f"{scope}:")
        for name, m in metrics.items():
            ci = m["ci"]
            out.append(f"  {name:20s} {_num(m['baseline']):>8s} -> {_num(m['candidate']):>8s}  delta "
                       f"{'n/a' if m['delta'] is None else format(m['delta'], '+.4f')}  CI "
                       f"{'n/a' if ci is None else f'[{ci[0]:+.4f}, {ci[1]:+.4f}]'}  p={m['p_sign_test']:.3g}  "
                       f"{m['direction'] or 'within noise'}")
    for x in cmp["left_out"]:
        out.append(f"  left out: {x['agent']} {x['task']} {x['variant']} ({x['why']})")
    out.append(f"security gate: baseline {cmp['security']['baseline']}, candidate {cmp['security']['candidate']}")
    out.append("REGRESSION: " + "; ".join(cmp["failed"]) if cmp["failed"] else "no threshold tripped")
    return "\n".join(out)
