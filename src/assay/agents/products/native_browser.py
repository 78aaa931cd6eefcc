"""The products' own browser tools (a task's ``tools: [browser]``, the native track): why none
can run against a harness world here, per product, as tried on this machine.

One reason is common to all: the webshop app is served only inside the harness's own browser
(Playwright routing, no socket), which is where the request log the verifier reads and the
approval gate live. A browser the product runs in the agent's sandbox has no route to the app,
and if it had one it would bypass both. Running one needs the app on a bridge endpoint with the
log and the gate on the server side.
"""

from __future__ import annotations

#: the neutral name a task uses for "the product's own browser"
BROWSER = "browser"

COMMON = ("the webshop app is reachable only through the harness's browser tools (webshop.*), where the request "
          "log and the approval gate are kept; a browser in the agent's sandbox has no route to it")

def reason(agent: str, own: str = "") -> str:
    """Why ``agent``'s own browser cannot run a task here (the trial's ``unsupported`` reason);
    ``own`` is what stands in the way for that product beside COMMON, as its adapter's
    :class:`~assay.agents.products.contract.ToolContract` says (``own_browser``)."""
    return f"unsupported: {own or f'{agent} has no browser tool in the tool contract'}; {COMMON}"
