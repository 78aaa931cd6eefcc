"""The products' own browser tools (a task's ``tools: [browser]``, the native track).

A task that allows ``browser`` gets its app world served on a bridge endpoint inside the
agent's sandbox (``$ASSAY_WEBSHOP_URL``, ``http://127.0.0.1:8080``), with the request log the
verifier reads and the approval gate kept on the server side (:mod:`assay.worlds.webshop.served`).
A product whose contract has a ``browser`` group runs it with its own browser tool there
(Hermes: ``browser_*`` over the ``agent-browser`` CLI); every other product is an
``unsupported`` trial whose reason is its own, as tried on this machine
(:attr:`~assay.agents.products.contract.ToolContract.own_browser`; docs/browser.md).
"""

from __future__ import annotations

from assay.spec.budget import Limits
from assay.spec.load import LoadedTask
from assay.spec.webshop import OWN_BROWSER

#: the neutral name a task uses for "the product's own browser"
BROWSER = OWN_BROWSER
#: RLIMIT_AS Chromium starts under: it reserves its pools and V8 cages up front (measured here:
#: it traps at 64 GiB and starts at 128 GiB); the sandbox's memory stays bounded by ``memory_mb``
CHROMIUM_ADDRESS_SPACE_MB = 256 * 1024


def reason(agent: str, own: str = "") -> str:
    """Why ``agent``'s own browser cannot run a task here (the trial's ``unsupported`` reason);
    ``own`` is what stands in the way for that product, as its adapter's contract says."""
    return f"unsupported: {own or f'{agent} has no browser tool in the tool contract'} (the native browser track)"


def with_chromium_space(limits: Limits, task: LoadedTask | None) -> Limits:
    """``limits`` with RLIMIT_AS raised for Chromium where ``task`` allows the product's own browser."""
    if task is None or BROWSER not in task.spec.tools or limits.memory_mb is None:
        return limits
    space = max(limits.address_space_mb or limits.memory_mb, CHROMIUM_ADDRESS_SPACE_MB)
    return limits.model_copy(update={"address_space_mb": space})
