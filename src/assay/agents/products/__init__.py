"""The four product agents assay drives: Pi, OpenClaw, Hermes Agent and DeepSeek Harness.

Each is installed into a cache by ``assay agents install NAME`` (see :mod:`.install`), configured
fresh per attempt to talk only to the trial's gateway, run headless in the sandbox, and its
native session normalized into assay's trace.
"""

from __future__ import annotations

from typing import Callable

PRODUCTS = ("pi", "openclaw", "hermes", "dsh")


def _factory(name: str) -> Callable[[dict], object]:
    def make(cfg: dict) -> object:
        if name == "pi":
            from assay.agents.products.pi import PiAgent as cls
        elif name == "openclaw":
            from assay.agents.products.openclaw import OpenClawAgent as cls
        elif name == "hermes":
            from assay.agents.products.hermes import HermesAgent as cls
        else:
            from assay.agents.products.dsh import DshAgent as cls
        return cls(cfg)
    return make


def register(register_agent: Callable) -> None:
    """Called by :mod:`assay.agents.registry`: one factory per product agent."""
    for name in PRODUCTS:
        register_agent(name, _factory(name))
