"""The published JSON Schema of suite, task, manifest, result, score, compare and report
documents: a by-product of the models.

The task schema lists every registered predicate kind (built-ins and plugins) under
``predicates`` as a discriminated ``oneOf``, so editors validate task files completely.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from assay.records.comparison import Comparison, ReportDocument
from assay.records.manifest import RunManifest
from assay.records.perf import PerfDocument
from assay.records.results import AttemptResult
from assay.records.scores import ScoreDocument
from assay.spec.perf import PerfSuite
from assay.spec.predicates import predicate_adapter
from assay.spec.suite import SuiteSpec
from assay.spec.task import TaskSpec

DOCUMENTS: dict[str, type[BaseModel]] = {"task": TaskSpec, "suite": SuiteSpec, "manifest": RunManifest,
                                         "result": AttemptResult, "score": ScoreDocument, "compare": Comparison,
                                         "report": ReportDocument, "perf-suite": PerfSuite, "performance": PerfDocument}


def json_schema(document: str) -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of one document kind: task, suite, manifest, result, score,
    compare or report (the last three describe what assay writes, so they use the serialised form)."""
    model = DOCUMENTS[document]
    mode = "serialization" if document in ("score", "compare", "report", "performance") else "validation"
    schema = model.model_json_schema(by_alias=True, mode=mode)
    if document == "task":
        preds = predicate_adapter().json_schema(by_alias=True, ref_template="#/$defs/{model}")
        schema.setdefault("$defs", {}).update(preds.pop("$defs", {}))
        schema["properties"]["predicates"] = {**preds, "minItems": 1,
                                              "description": schema["properties"]["predicates"].get("description", "")}
        schema["$defs"].pop("PredicateSpec", None)
        schema["required"] = [r for r in schema.get("required", []) if r != "id"]  # defaults to the folder name
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"assay {document} document" if mode == "serialization" else f"assay {document} file"
    return schema
