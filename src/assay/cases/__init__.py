"""The production loop: production traces in, redacted candidate cases out, a person's review,
promotion into a suite with provenance; held-out tasks and the contamination check
(docs/production-loop.md)."""

from assay.cases.contamination import ContaminationReport, Finding, check_contamination
from assay.cases.heldout import HeldOut
from assay.cases.importer import READERS, ImportReport, import_traces
from assay.cases.review import bump_version, promote, review
from assay.cases.traces import ImportedTrace

__all__ = ["READERS", "ContaminationReport", "Finding", "HeldOut", "ImportReport", "ImportedTrace", "bump_version",
           "check_contamination", "import_traces", "promote", "review"]
