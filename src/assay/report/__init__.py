"""Report: one self-contained HTML file with inline SVG figures, Markdown, and the versioned JSON.

The names below are read from :mod:`assay.report.build` on first use, so that importing one
small module of the package (``assay.report.fmt``, which every run's summary uses) does not
import every report renderer."""

from __future__ import annotations

from typing import Any

__all__ = ["FORMATS", "REPORT_SCHEMA", "build_report", "report_document", "report_json", "write_report"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from assay.report import build

        return getattr(build, name)
    raise AttributeError(f"module 'assay.report' has no attribute {name!r}")
