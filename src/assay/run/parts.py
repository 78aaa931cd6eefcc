"""The parts of a run made from its inputs or its manifest: the agents and the harness services.

One place for both, used by the runner (start, resume) and by the Ray executor's hub and node
workers, which rebuild the same parts from the manifest on their own nodes.
"""

from __future__ import annotations

from pathlib import Path

from assay._optional import optional_import
from assay.agents.base import AgentAdapter, AgentInfo
from assay.agents.registry import resolve_agent
from assay.errors import AgentUnavailable, UsageError
from assay.harness.services import HarnessService
from assay.records.manifest import RunManifest

#: modules offering harness services; each exposes ``service_from_manifest(manifest) -> HarnessService | None``
SERVICE_MODULES = ("assay.gateway.service", "assay.worlds.service", "assay.judge.service",
                   "assay.conversations.simulator")


def resolve_agents(refs: list[str]) -> tuple[dict[str, AgentAdapter], list[AgentInfo]]:
    """Every agent of the run, checked before the run; an unusable one is a usage error."""
    adapters: dict[str, AgentAdapter] = {}
    infos: list[AgentInfo] = []
    for ref in refs:
        adapter = resolve_agent(ref)
        info = adapter.info()
        if not info.usable:
            raise AgentUnavailable(f"agent {adapter.name!r} cannot be used here: {info.detail}")
        if adapter.name in adapters:
            raise UsageError(f"agent {adapter.name!r} named twice")
        adapters[adapter.name] = adapter
        if ref.endswith((".yaml", ".yml")):
            info = AgentInfo(info.name, info.kind, info.version, True, info.detail,
                             {**info.config, "_source": str(Path(ref).resolve())})
        infos.append(info)
    return adapters, infos


def build_services(manifest: RunManifest) -> list[HarnessService]:
    """The run's harness services, each made from the manifest (not started)."""
    services = []
    for name in SERVICE_MODULES:
        mod = optional_import(name)
        if mod is None:
            continue
        svc = mod.service_from_manifest(manifest)
        if svc is not None:
            services.append(svc)
    return services


def agent_refs(manifest: RunManifest) -> list[str]:
    """How to resolve each agent of a run again (a command agent by its YAML file)."""
    return [a.config["_source"] if a.kind == "command" and a.config.get("_source") else a.name
            for a in manifest.agents]
