"""The four product agents assay drives: Pi, OpenClaw, Hermes Agent and DeepSeek Harness.

Each is installed into a cache by ``assay agents install NAME`` (see :mod:`.install`), configured
fresh per attempt to talk only to the trial's gateway, run headless in the sandbox, and its
native session normalized into assay's trace. :data:`PRODUCTS` is their registry (entry-point
group ``assay.products``); every product is also an agent of :mod:`assay.agents.registry`.
"""

from __future__ import annotations

from assay.registry import Registry

PRODUCTS: Registry[type] = Registry("product agent", "assay.products", {
    "pi": "assay.agents.products.pi.adapter:PiAgent",
    "openclaw": "assay.agents.products.openclaw.adapter:OpenClawAgent",
    "hermes": "assay.agents.products.hermes.adapter:HermesAgent",
    "dsh": "assay.agents.products.dsh.adapter:DshAgent",
})
