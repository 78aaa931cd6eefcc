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

#: what stands in the way for each product, beside COMMON (docs/browser.md, "Products' own browsers")
REASONS = {
    "pi": "Pi has no browser tool",
    "dsh": "DSH's headless profile has no browser tool (web_fetch and web_search only)",
    "openclaw": "OpenClaw's browser tool is a plugin driven by the OpenClaw Gateway's control service, denied on the "
                "controlled track",
    "hermes": "Hermes' browser_* tools drive the agent-browser CLI (npm agent-browser, which runs here against "
              "/usr/bin/chromium), not installed with Hermes",
}


def reason(agent: str) -> str:
    """Why ``agent``'s own browser cannot run a task here (the trial's ``unsupported`` reason)."""
    own = REASONS.get(agent, f"{agent} has no browser tool in the tool contract")
    return f"unsupported: {own}; {COMMON}"
