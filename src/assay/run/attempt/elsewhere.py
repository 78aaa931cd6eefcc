"""The verify phase's other road: the final workspace shipped to a verifier node of its own
identity (a cluster's verifier pods), the report brought back. The attempt's node keeps
everything else (the trace, the evidence, the seal)."""

from __future__ import annotations

import asyncio

from assay.errors import VerifierError
from assay.records.verifier_inputs import VerifierInputs
from assay.run.attempt.live import AttemptEnv, Live
from assay.run.attempt.records import SetUp
from assay.spec.budget import Limits
from assay.verify.remote import VerifyRequest
from assay.verify.shipped import ShippedTreeError, pack_tree
from assay.verify.verifier import VerifierReport

#: bytes shipped at most when the task's limits name no disk bound
DEFAULT_SHIP_BYTES = 1 << 30


def ship_bound(disk_mb: int | None) -> int:
    """What one final workspace may weigh on the wire: the disk bound the agent ran under."""
    return disk_mb * (1 << 20) if disk_mb else DEFAULT_SHIP_BYTES


async def verify_elsewhere(env: AttemptEnv, live: Live, set_up: SetUp, extra: VerifierInputs,
                           limits: Limits) -> tuple[VerifierReport, str]:
    """Pack the final workspace (never following what the agent made) and have it verified."""
    assert env.remote_verify is not None
    try:
        tree = await asyncio.to_thread(pack_tree, live.workspace, max_bytes=ship_bound(limits.disk_mb))
    except ShippedTreeError as e:
        raise VerifierError(f"the final workspace could not be shipped to a verifier node: {e}",
                            reason="verifier_transfer") from e
    h = env.handle
    req = VerifyRequest(trial_id=h.trial_id, attempt=h.attempt, task_id=env.task.id, tree=tree,
                        initial_digests=dict(set_up.initial), events=tuple(env.trace.events()), limits=limits,
                        extra=extra)
    return await env.remote_verify(req)
