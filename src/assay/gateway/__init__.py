"""The model gateway: one OpenAI- and Anthropic-compatible endpoint per run, a keyed session per
attempt, pluggable backends (scripted, replay, upstream, local), accounting, budgets, faults
and a recording of every exchange."""

from assay.gateway.config import gateway_record_from_cli
from assay.gateway.service import GatewayService, service_from_manifest

__all__ = ["GatewayService", "gateway_record_from_cli", "service_from_manifest"]
