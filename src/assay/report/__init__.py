"""Report: one self-contained HTML file with inline SVG figures, Markdown, and the versioned JSON."""

from assay.report.build import FORMATS, REPORT_SCHEMA, build_report, report_document, report_json, write_report

__all__ = ["FORMATS", "REPORT_SCHEMA", "build_report", "report_document", "report_json", "write_report"]
