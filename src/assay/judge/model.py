"""Which model judges: a ``--model`` value for a judge, served by a gateway of the judge's own."""

from __future__ import annotations

from assay.errors import UsageError
from assay.records.manifest import GatewayRecord

FIX = "use upstream:BASE_URL#MODEL (any OpenAI-compatible server) or local[:MODEL.gguf]"


def judge_record(model: str) -> GatewayRecord:
    """The gateway record of a judge model; scripted and replay cannot judge new items."""
    from assay.gateway.backends.local import local_record
    from assay.gateway.config import upstream_record

    kind, _, arg = (model or "").strip().partition(":")
    if kind == "upstream" and arg:
        return upstream_record(arg)
    if kind == "local":
        return local_record(arg or None)
    raise UsageError(f"--model {model!r} cannot judge (fix: {FIX})")
