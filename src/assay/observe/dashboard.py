"""The Grafana home page of a campaign, built with grafana-foundation-sdk (never hand-written JSON).

Panels follow the seeds' order: strict success with its interval, category heatmap, security
gate, cost per success, P95 latency, failure recovery, human intervention, cleanup failures.
Every panel links to the matching anchor of the HTML report (``$report`` is its URL), so a
number on the dashboard is one click from the trials behind it.

The queries are in :data:`PANELS` as plain strings so tests can run each one against
Prometheus; ``$suite`` and ``$__range`` are Grafana variables.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from assay.observe.series import PREFIX

S = 'suite="$suite"'
RANGE = "[$__range]"


def _inc(name: str, sel: str = "") -> str:
    return f"increase({PREFIX}{name}{{{S}{',' + sel if sel else ''}}}{RANGE})"


def _by(by: str, name: str, sel: str = "") -> str:
    return f"sum by ({by}) ({_inc(name, sel)})"


PASS, SCORED = 'result="pass"', 'result!="skipped"'
#: the seeds' success-rate query (micro: passes over judged-or-errored trials, skipped excluded)
SUCCESS_RATE = f"{_by('agent', 'trials_total', PASS)} / {_by('agent', 'trials_total', SCORED)}"
#: the same rate per agent and category, only where the category has scored trials
CATEGORY_RATE = (f"{_by('agent, category', 'trials_total', PASS)} / "
                 f"({_by('agent, category', 'trials_total', SCORED)} > 0)")
#: assay's macro rate in PromQL: category rates weighted by the suite's frozen weights
MACRO_RATE = (f"sum by (agent) (({CATEGORY_RATE}) * on (category) group_left {PREFIX}category_weight{{{S}}}) / "
              f"sum by (agent) ((({CATEGORY_RATE}) * 0 + 1) * on (category) group_left {PREFIX}category_weight{{{S}}})")
PASSES = _by("agent", "trials_total", PASS)


def _last(name: str) -> str:
    """The last value of a gauge within the window: a live exporter's series go stale once the run
    ends and its target is gone, and a plain selector would then show nothing."""
    return f"last_over_time({PREFIX}{name}{{{S}}}{RANGE})"


@dataclass(frozen=True)
class PanelSpec:
    title: str
    kind: str  # timeseries | heatmap | stat | bargauge
    queries: dict[str, str]  # legend -> PromQL
    unit: str = "none"
    link: str = "agent"  # report anchor: agent | category | security
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


PANELS: tuple[PanelSpec, ...] = (
    PanelSpec("Strict success rate (95% interval)", "timeseries", {
        "{{agent}} strict (assay)": _last("strict_rate"),
        "{{agent}} 95% low": _last("strict_rate_ci_low"),
        "{{agent}} 95% high": _last("strict_rate_ci_high"),
        "{{agent}} pass / scored (seeds' query)": SUCCESS_RATE,
    }, unit="percentunit", description="The strict rate and interval are assay's own figures (macro over "
       "categories with the frozen weights); the last line is the seeds' query over the window (micro)."),
    PanelSpec("Category heatmap", "heatmap", {"{{agent}} / {{category}}": CATEGORY_RATE}, unit="percentunit",
              link="category"),
    PanelSpec("Security gate", "stat", {
        "{{agent}}": f"max by (agent) ({_last('security_gate_failed')})",
    }, link="security", description="FAILED on any high or critical incident or executed wrong side effect."),
    PanelSpec("Cost per success", "bargauge", {"{{agent}}": f"{_by('agent', 'cost_usd_total')} / {PASSES}"},
              unit="currencyUSD"),
    PanelSpec("P95 latency of successes (histogram estimate)", "bargauge", {
        "{{agent}}": f"histogram_quantile(0.95, {_by('agent, le', 'trial_duration_seconds_bucket', PASS)})",
    }, unit="s", description="Approximate: Prometheus interpolates within the histogram's buckets (1, 2.5, 5, 10, "
       "30, 60 s ...), so this can differ from the exact P95 of the report by up to a bucket's width; the "
       "report's figure is computed from the trials."),
    PanelSpec("Failure recovery", "bargauge", {
        "{{agent}}": f"{_by('agent', 'recovered_trials_total')} / {_by('agent', 'fault_trials_total')}",
    }, unit="percentunit", description="Judged trials with injected faults that still passed."),
    PanelSpec("Human intervention per success", "bargauge", {
        "{{agent}}": f"{_by('agent', 'interventions_total')} / {PASSES}",
    }),
    PanelSpec("Cleanup failures", "bargauge", {"{{agent}}": _by("agent", "cleanup_failures_total")}),
)


def _link_url(kind: str) -> str:
    if kind == "security":
        return "${report}#security"
    if kind == "category":
        return "${report}#cat-${__field.labels.agent}-${__field.labels.category}"
    return "${report}#agent-${__field.labels.agent}"


def build_dashboard(*, title: str = "assay: agent evaluation", uid: str = "assay-home",
                    report_url: str = "reports/report.html") -> Any:
    """The dashboard model (a grafana-foundation-sdk ``Dashboard``)."""
    from grafana_foundation_sdk.builders import bargauge, heatmap, stat, timeseries
    from grafana_foundation_sdk.builders.dashboard import (Dashboard, DashboardLink, DatasourceVariable,
                                                           QueryVariable, TextBoxVariable)
    from grafana_foundation_sdk.builders.prometheus import Dataquery
    from grafana_foundation_sdk.models.dashboard import (DataSourceRef, ValueMap, ValueMappingResult,
                                                         VariableRefresh)

    ds = DataSourceRef(type_val="prometheus", uid="${datasource}")
    builders = {"timeseries": timeseries.Panel, "heatmap": heatmap.Panel, "stat": stat.Panel,
                "bargauge": bargauge.Panel}
    d = (Dashboard(title).uid(uid).tags(["assay", "agent-eval"]).refresh("30s").time("now-24h", "now")
         .with_variable(DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
         .with_variable(QueryVariable("suite").label("Suite").datasource(ds)
                        .query(f"label_values({PREFIX}trials_total, suite)").refresh(VariableRefresh.ON_TIME_RANGE_CHANGED))
         .with_variable(TextBoxVariable("report").label("Report URL").default_value(report_url)))
    for i, p in enumerate(PANELS):
        panel = builders[p.kind]().title(p.title).datasource(ds).unit(p.unit).height(8).span(12 if i < 2 else 6)
        if p.description:
            panel = panel.description(p.description)
        for ref, (legend, expr) in zip("ABCDEFGH", p.queries.items()):
            q = Dataquery().expr(expr).legend_format(legend).ref_id(ref)
            panel = panel.with_target(q if p.kind == "timeseries" else q.instant())
        panel = panel.data_links([DashboardLink("Trials in the report").url(_link_url(p.link)).target_blank(True)])
        if p.kind == "stat":
            panel = panel.mappings([ValueMap({"0": ValueMappingResult(text="PASSED", color="green"),
                                              "1": ValueMappingResult(text="FAILED", color="red")})])
        d = d.with_panel(panel)
    return d.build()


def dashboard_json(**kw: Any) -> str:
    """`assay dashboard`: the dashboard as JSON for Grafana's import (or provisioning)."""
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    return JSONEncoder(sort_keys=True, indent=2).encode(build_dashboard(**kw))


def panel_queries(doc: dict[str, Any] | str) -> list[tuple[str, str]]:
    """(panel title, expr) for every query of a dashboard JSON document."""
    data = json.loads(doc) if isinstance(doc, str) else doc
    return [(p.get("title", ""), t["expr"]) for p in data.get("panels", []) for t in p.get("targets", [])]
