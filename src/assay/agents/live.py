"""A product session that takes input while it works: JSON commands on its stdin, JSON events on
its stdout, one per line (Pi's RPC mode). An adapter that has such a mode offers it with
``live_input(ctx)``; what drives it is the measurement of input during compaction
(run/perf/during.py), which needs to offer a second message while the first is still being
worked on. A headless one-shot run (stdin closed) cannot be asked that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class LiveProtocol(Protocol):
    """The commands and events of one product's live mode, as bytes on its stdin and parsed JSON
    objects read from its stdout (``ref``: the command's own id, echoed in its response)."""

    #: how the second message is offered, in the product's own words (recorded with the figure)
    during_command: str

    def prompt(self, text: str, ref: str) -> bytes:
        """The first message of the session, to an idle product."""

    def during(self, text: str, ref: str) -> bytes:
        """A message offered while the product works (queued after what it is doing, if it takes it)."""

    def state(self, ref: str) -> bytes:
        """Ask whether the product is still working or holds queued messages."""

    def response(self, event: dict[str, Any], ref: str) -> tuple[bool, str] | None:
        """``(accepted, the response as the product wrote it)`` if ``event`` answers command ``ref``, else None."""

    def settled(self, event: dict[str, Any]) -> bool:
        """Whether ``event`` says the product finished its work (idle until the next message)."""

    def idle(self, event: dict[str, Any]) -> bool:
        """Whether a response to :meth:`state` says nothing is running and nothing is queued."""


@dataclass(frozen=True)
class LiveInput:
    """How to start a product's live mode in the sandbox (paths inside), and how to speak to it."""

    argv: list[str]
    env: dict[str, str]
    protocol: LiveProtocol
    config: dict[str, Any]  # the effective command line, recorded with the figure
