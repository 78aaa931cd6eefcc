"""OpenTelemetry export: each trial's span tree sent over OTLP/HTTP with the official SDK.

The endpoint comes from ``--otlp URL`` or the standard variables (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``..._HEADERS``, ``..._TIMEOUT``, ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_SDK_DISABLED``), which the SDK reads itself. Spans carry
their recorded times, so a finished run exported later looks exactly like the live export.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from assay.errors import IntegrityError
from assay.observe._plugin import hookimpl
from assay.observe.facts import open_run
from assay.observe.spans import SpanPlan, span_id_of, trace_id_of, trial_plan
from assay.records.results import AttemptResult
from assay.store.rundir import RunDir
from assay.trace.writer import iter_events

NS = 1_000_000_000
log = logging.getLogger(__name__)


def _ns(t: float) -> int:
    return int(round(t * NS))


def otlp_enabled(url: str | None = None) -> bool:
    """True when an explicit URL or the standard variables ask for an OTLP export."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return bool(url or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def traces_endpoint(url: str) -> str:
    """``--otlp URL`` is a base URL like ``OTEL_EXPORTER_OTLP_ENDPOINT``: ``/v1/traces`` is appended."""
    url = url.rstrip("/")
    return url if url.endswith("/v1/traces") else url + "/v1/traces"


class TrialTracer:
    """An SDK tracer provider whose ids are chosen per span (derived, so re-export is stable)."""

    def __init__(self, url: str | None = None, *, headers: dict[str, str] | None = None,
                 resource: dict[str, Any] | None = None, exporter: Any = None):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.id_generator import IdGenerator

        owner = self

        class _Ids(IdGenerator):
            def generate_trace_id(self) -> int:
                return owner._next_trace

            def generate_span_id(self) -> int:
                return owner._next_span

        self._next_trace = 1
        self._next_span = 1
        self._lock = threading.Lock()
        if exporter is None:
            kw: dict[str, Any] = {"headers": headers} if headers else {}
            exporter = OTLPSpanExporter(endpoint=traces_endpoint(url), **kw) if url else OTLPSpanExporter(**kw)
        self.exporter = _Counting(exporter)
        attrs = dict(resource or {})
        if not os.environ.get("OTEL_SERVICE_NAME") and "service.name=" not in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", ""):
            attrs.setdefault("service.name", "assay")  # else the SDK's own detector reads the variables
        self.provider = TracerProvider(resource=Resource.create(attrs), id_generator=_Ids())
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter))
        from assay import __version__ as version

        self.tracer = self.provider.get_tracer("assay", version)

    def emit(self, run_id: str, trial_id: str, plan: SpanPlan) -> int:
        """Send one trial's tree; returns the number of spans."""
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        tid = trace_id_of(run_id, trial_id)
        count = 0

        from opentelemetry.trace import SpanKind

        def one(sp: SpanPlan, ctx: Any) -> None:
            nonlocal count
            self._next_span = span_id_of(tid, sp.key)
            attrs = {**sp.attributes, **({"error.type": sp.error} if sp.error else {})}
            span = self.tracer.start_span(sp.name, context=ctx, attributes=attrs, start_time=_ns(sp.start),
                                          kind=SpanKind.CLIENT if sp.kind == "client" else SpanKind.INTERNAL)
            for name, ts, attrs in sp.events:
                span.add_event(name, attrs, timestamp=_ns(ts))
            if sp.error:
                span.set_status(Status(StatusCode.ERROR, sp.error))
            child_ctx = trace.set_span_in_context(span)
            for c in sp.children:
                one(c, child_ctx)
            span.end(end_time=_ns(max(sp.end, sp.start)))
            count += 1

        with self._lock:
            self._next_trace = tid
            from opentelemetry.context import Context

            one(plan, Context())
        return count

    def close(self) -> int:
        """Flush every pending span and stop the exporter; returns how many batches failed."""
        self.provider.force_flush()
        self.provider.shutdown()
        return self.exporter.failed


class _Counting:
    """Wraps an exporter and counts the batches the backend refused (a silent loss is a failure)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.failed = 0
        self.sent = 0

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        result = self.inner.export(spans)
        if result == SpanExportResult.SUCCESS:
            self.sent += len(spans)
        else:
            self.failed += 1
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))


def trial_tree(rd: RunDir, trial_id: str) -> SpanPlan | None:
    from assay.score.engine import SCORER_VERSION

    attempts: list[AttemptResult] = [r for n in rd.attempts_of(trial_id) if (r := rd.result(trial_id, n)) is not None]
    if not attempts:
        return None
    path = rd.trace_path(trial_id)
    events = list(iter_events(path)) if path.exists() else []
    return trial_plan(attempts, events, scorer_version=SCORER_VERSION)


def export_run_otlp(path: Path | str, url: str | None = None, *, headers: dict[str, str] | None = None,
                    resource: dict[str, Any] | None = None, exporter: Any = None, verify: bool = True) -> dict[str, int]:
    """Export every trial of a finished run; returns counts of trials and spans, and the number of
    batches the backend refused (``failed``; the CLI fails when it is not 0)."""
    rd, manifest = open_run(path, verify=verify)
    tracer = TrialTracer(url, headers=headers, resource={"assay.run_id": manifest.run_id, **(resource or {})},
                         exporter=exporter)
    trials = spans = withheld = 0
    failed = 0
    held = manifest.held_out_ids()
    try:
        for tid in manifest.plan.trials:
            if tid.split(".", 1)[0] in held:  # a held-out task's trace never leaves the run directory
                withheld += 1
                continue
            plan = trial_tree(rd, tid)
            if plan is not None:
                spans += tracer.emit(manifest.run_id, tid, plan)
                trials += 1
    finally:
        failed = tracer.close()
    return {"trials": trials, "spans": spans, "failed": failed, "withheld": withheld}


class OtlpPlugin:
    """Exports each trial as its final attempt lands in the run directory (same tree as
    :func:`export_run_otlp`); spans are batched in the background and flushed at the end."""

    def __init__(self, url: str | None = None, *, headers: dict[str, str] | None = None,
                 resource: dict[str, Any] | None = None, exporter: Any = None):
        self.url, self.headers, self.resource, self.exporter = url, headers, resource, exporter
        self.tracer: TrialTracer | None = None
        self.failed = 0
        self._rd: Any = None
        self._run_id = ""
        self._held: frozenset[str] = frozenset()

    @hookimpl
    def assay_run_started(self, run_dir: Any, manifest: Any, planned: int, pending: int) -> None:
        self._rd, self._run_id = run_dir, manifest.run_id
        self._held = manifest.held_out_ids()
        self.tracer = TrialTracer(self.url, headers=self.headers, exporter=self.exporter,
                                  resource={"assay.run_id": manifest.run_id, **(self.resource or {})})

    @hookimpl
    def assay_attempt_finished(self, result: Any, final: bool) -> None:
        if not final or self.tracer is None or result.task_id in self._held:
            return
        try:
            plan = trial_tree(self._rd, result.trial_id)
        except (OSError, ValueError, IntegrityError) as e:  # watching must never stop the evaluation it watches
            self.failed += 1
            log.error("otlp: trial %s not exported: %s", result.trial_id, e)
            return
        if plan is not None:
            self.tracer.emit(self._run_id, result.trial_id, plan)

    @hookimpl
    def assay_run_finished(self, run_dir: Any, results: list[Any]) -> None:
        if self.tracer is not None:
            self.failed += self.tracer.close()
            self.tracer = None
            if self.failed:
                log.warning("%d OTLP span batch(es) were refused or lost; export the run again with "
                            "`assay export-otlp %s`", self.failed, run_dir.path)
