"""Errors the gateway answers to an agent: one status, one type, one message, rendered per wire.

These are *answers* (the agent sees them and may react), not exceptions of the harness: a
refused key, a spent budget, a diverging replay, an injected fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: response header of a budget refusal: the budget that refused (``run_budget``, ``tool_calls``...),
#: so a harness client (the judge) tells the run's budget from its own
BUDGET_HEADER = "X-Assay-Budget"


@dataclass
class WireError(Exception):
    status: int
    type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.status} {self.type}: {self.message}"


def openai_error_body(e: WireError) -> dict:
    return {"error": {"message": e.message, "type": e.type, "code": e.type, "param": None}}


def anthropic_error_body(e: WireError) -> dict:
    kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
            429: "rate_limit_error", 529: "overloaded_error"}.get(e.status, "api_error")
    if e.type == "budget_exceeded":
        kind = "invalid_request_error"
    return {"type": "error", "error": {"type": kind, "message": f"{e.type}: {e.message}"}}
