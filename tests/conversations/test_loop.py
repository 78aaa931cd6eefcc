"""The conversation loop's record of a turn's answer: the engine's final output, else the last
answer the agent's session recorded in that turn."""

from __future__ import annotations

from assay.agents.base import AgentOutcome
from assay.agents.products.normalized import Normalized
from assay.conversations.loop import turn_text
from assay.trace.events import EventKind


def test_a_turns_text_is_its_final_output_else_the_last_answer_its_session_recorded() -> None:
    said = AgentOutcome(exit_code=0, final_output="From the engine.",
                        events=(Normalized(EventKind.final_output, {"text": "From the session."}),))
    assert turn_text(said) == "From the engine."
    session_only = AgentOutcome(exit_code=0, events=(Normalized(EventKind.final_output, {"text": "first"}),
                                                     Normalized(EventKind.log, {"text": "not an answer"}),
                                                     Normalized(EventKind.final_output, {"text": "last"})))
    assert turn_text(session_only) == "last"
    assert turn_text(AgentOutcome(exit_code=0)) is None and turn_text(AgentOutcome(exit_code=0, final_output="")) == ""
