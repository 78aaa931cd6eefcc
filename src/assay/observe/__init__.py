"""Watching runs from outside: Prometheus metrics, a Grafana dashboard, OpenTelemetry traces and
a Langfuse export. Everything here is derived from the run directory (or from the run's plugin
hooks, which fire after the run directory was written), through the scorer's own trial facts.

The heavy libraries (prometheus-client, opentelemetry, grafana-foundation-sdk, langfuse) are the
``observe`` extra and are imported only when an export is asked for.
"""

from __future__ import annotations

from assay.observe.metrics import MetricsPlugin, series_from_run, write_run_textfile
from assay.observe.series import RunSeries

__all__ = ["MetricsPlugin", "RunSeries", "series_from_run", "write_run_textfile"]
