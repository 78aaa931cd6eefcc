"""Verifier nodes: a cluster's nodes that advertise :data:`VERIFIER_RESOURCE` verify every
attempt's final state, under an identity of their own (``assay k8s render`` gives their pods a
ServiceAccount the sandbox workers do not have); the attempt's node only ships the state.

A cluster without them verifies on the attempt's own node, in a sandbox of its own, as before.
Importing this module imports Ray: only ``--executor ray`` does.
"""

from __future__ import annotations

import itertools
from typing import Any

import ray
from ray.exceptions import RayActorError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from assay.errors import RunDirError, VerifierError
from assay.records.manifest import RunManifest
from assay.run.attempt.elsewhere import ship_bound
from assay.sandbox.registry import get_backend
from assay.spec.load import load_suite
from assay.verify.remote import RemoteVerify, VerifierNode, VerifyRequest
from assay.verify.verifier import VerifierReport

#: the custom resource a verifier node advertises (its count: verifications at once)
VERIFIER_RESOURCE = "assay_verifier"


def verifier_nodes(nodes: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """(node id, slots) of the live nodes that verify."""
    return [(n["NodeID"], int(n["Resources"][VERIFIER_RESOURCE])) for n in nodes
            if n.get("Alive") and n["Resources"].get(VERIFIER_RESOURCE, 0) >= 1]


class RayVerifierNode:
    """A :class:`VerifierNode` for one campaign: the run's suite, checked by digest, and its backend."""

    def __init__(self, manifest_json: str):
        manifest = RunManifest.model_validate_json(manifest_json)
        suite = load_suite(manifest.suite["path"])
        self.node_id = ray.get_runtime_context().get_node_id()
        if suite.digest != manifest.suite["digest"]:
            raise RunDirError(f"verifier node {self.node_id[:12]}: the suite at {manifest.suite['path']} is not the "
                              f"one of the run (digest {suite.digest[:12]} != {manifest.suite['digest'][:12]})")
        self.node = VerifierNode(suite, get_backend(manifest.sandbox.backend), self.node_id)

    def facts(self) -> dict[str, str]:
        return {"node_id": self.node_id}

    async def verify(self, req: VerifyRequest) -> tuple[VerifierReport, str]:
        return await self.node.verify(req, max_bytes=ship_bound(req.limits.disk_mb)), self.node_id

    def close(self) -> None:
        self.node.close()


def start_verifiers(manifest_json: str, nodes: list[tuple[str, int]]) -> list[Any]:
    """One verifier actor per verifier node, pinned there."""
    actor = ray.remote(RayVerifierNode)
    return [actor.options(num_cpus=0, max_concurrency=max(1, slots), max_restarts=0, max_task_retries=0,
                          scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(manifest_json)
            for node, slots in nodes]


def remote_verify_over(actors: list[Any]) -> RemoteVerify:
    """What an attempt calls: the next verifier in turn; one that is gone is an infra error (retried)."""
    turn = itertools.cycle(actors)

    async def verify(req: VerifyRequest) -> tuple[VerifierReport, str]:
        try:
            return await next(turn).verify.remote(req)
        except RayActorError as e:
            raise VerifierError(f"the verifier node is gone: {e}", reason="verifier_unreachable",
                                retryable=True) from e
        except RayTaskError as e:  # the verifier's own error, raised there: keep its class and reason
            cause = e.as_instanceof_cause() if hasattr(e, "as_instanceof_cause") else e
            if isinstance(cause, VerifierError):
                raise VerifierError(str(cause), reason=cause.reason, retryable=cause.retryable) from e
            raise
    return verify
