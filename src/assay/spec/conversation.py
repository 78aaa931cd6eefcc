"""A conversation task (``conversation:`` in ``task.yaml``): a typed history, then live turns.

Splicing earlier turns into one prompt as text makes a multi-turn check a single-turn one. A
conversation task instead declares what already happened as typed events (fed to the agent
through its own session mechanism, never pasted into a prompt), then the turns under test, each
with the predicates that must hold over the state *after that turn*::

    conversation:
      history:
        - {type: user, text: "Record 86 CNY at Lumen Kitchen yesterday."}
        - {type: claim, text: "Already recorded.", name: ledger.add_entry, arguments: {...}}
      turns:
        - user: "Did you record it?"             # turns[0] without `user`: the task's prompt
          predicates: [{id: t1-written, kind: world_diff, ...}]
        - reply:                                  # the scripted user, keyed on what the agent did
            - {when: {called: user.ask_clarification}, user: "It is dining."}
          otherwise: null                         # off script: the conversation ends (recorded)
      stop_words: ["bye"]
      max_turns: 4

A ``claim`` is an earlier agent turn that said it had acted without the world proving it: it is
fed back as a *failed* action (the call, answered by an error), so what the agent sees is the
truth, not its own false claim.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, field_validator, model_validator

from assay.untrusted.bounded_re import Pattern

from assay.spec.predicates import PredicateSpec, predicate_adapter

#: what an unproven claim is answered with in the history fed back to the agent
UNPROVEN_CLAIM_ERROR = ("not executed: the world holds no record of this action; the earlier claim that it "
                        "was done is false")


class _Event(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)


class UserSaid(_Event):
    """A user message."""

    type: Literal["user"] = "user"
    text: str


class AgentSaid(_Event):
    """An agent message (text only)."""

    type: Literal["agent"] = "agent"
    text: str


class ToolDone(_Event):
    """A tool call the agent made and its result (the task's initial world state must reflect it)."""

    type: Literal["tool"] = "tool"
    name: str = Field(description="Neutral tool name (shell, read, ... or WORLD.TOOL).")
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = Field(None, description="What the tool answered (JSON).")


class ToolFailed(_Event):
    """A tool call that failed: the agent sees the call answered by ``error``."""

    type: Literal["tool_failed"] = "tool_failed"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    error: str


class Clarification(_Event):
    """The agent asked the user a question that is still open (the next user turn answers it)."""

    type: Literal["clarification"] = "clarification"
    question: str


class Approval(_Event):
    """A decision on an action the agent asked approval for, given by the user."""

    type: Literal["approval"] = "approval"
    name: str = Field(description="The tool the approval is about.")
    arguments: dict[str, Any] = Field(default_factory=dict)
    decision: Literal["approved", "denied"]
    note: str = ""


class Correction(_Event):
    """A user message correcting something said or done earlier ("that was wrong, it is dining")."""

    type: Literal["correction"] = "correction"
    text: str


class Claim(_Event):
    """An earlier agent turn that *claimed* an action without the world proving it. Fed back as the
    claimed call answered by an error (:data:`UNPROVEN_CLAIM_ERROR`), then the claim's text."""

    type: Literal["claim"] = "claim"
    text: str = Field(description="What the agent said (e.g. 'Already recorded.').")
    name: str = Field(description="The tool call the claim stands for (e.g. ledger.add_entry).")
    arguments: dict[str, Any] = Field(default_factory=dict)


HistoryEvent = Annotated[Union[UserSaid, AgentSaid, ToolDone, ToolFailed, Clarification, Approval, Correction, Claim],
                         Field(discriminator="type")]


class WhenAgent(BaseModel):
    """What the agent did in the turn before (every given field must hold). Read from the world's
    own call record and the agent's final text, never from what it claims it did."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    called: str | None = Field(None, description="A world tool executed in that turn (e.g. user.ask_clarification).")
    not_called: str | None = Field(None, description="A world tool NOT executed in that turn.")
    said: Pattern | None = Field(None, description="A regular expression the agent's final text matches (case-insensitive).")

    @model_validator(mode="after")
    def _some(self) -> "WhenAgent":
        if self.called is None and self.not_called is None and self.said is None:
            raise ValueError("`when` needs at least one of called, not_called, said")
        return self


class Reply(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    when: WhenAgent
    user: str = Field(description="What the user says when `when` holds.")


class Turn(BaseModel):
    """One live turn: what the (scripted) user says, and what must hold over the state after it."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    user: str | None = Field(None, description="The user's message (fixed). Unset in turns[0]: the task's "
                                                "prompt (its variant's, if any).")
    reply: list[Reply] = Field(default_factory=list, description="Scripted user: the first rule that holds for "
                                                                   "what the agent did in the previous turn speaks.")
    otherwise: str | None = Field(None, description="What the user says when no `reply` rule holds; "
                                                     "unset: the simulator is off script and the conversation ends.")
    predicates: list[SerializeAsAny[PredicateSpec]] = Field(
        default_factory=list, description="Checked over the state after this turn (world, files, trace so far).")

    @field_validator("predicates", mode="before")
    @classmethod
    def _predicates(cls, v: Any) -> Any:
        if isinstance(v, list) and not all(isinstance(p, PredicateSpec) for p in v):
            return predicate_adapter().validate_python(v)
        return v

    @model_validator(mode="after")
    def _said(self) -> "Turn":
        if self.user is not None and (self.reply or self.otherwise is not None):
            raise ValueError("a turn has either `user` or `reply`/`otherwise`, not both")
        return self


class ModelSimulator(BaseModel):
    """A simulated user driven by a model through the gateway (its own key, budget, accounting)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    persona: str = Field(description="Who the user is and what they want (the simulator's instructions).")
    script: str | None = Field(None, description="Scripted model turns for the simulator under the scripted "
                                                 "backend (a model.yaml in the task folder).")
    max_calls: int = Field(20, ge=1, description="The simulator's own model-call budget for one attempt.")


class ConversationSpec(BaseModel):
    """A history of typed events, then the live turns under test."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    history: list[HistoryEvent] = Field(default_factory=list, description="What already happened, as typed events.")
    turns: list[Turn] = Field(default_factory=list, description="Scripted live turns, in order.")
    simulator: ModelSimulator | None = Field(None, description="A model-driven user after the scripted turns.")
    stop_words: list[str] = Field(default_factory=list, description="A user message containing one ends the conversation.")
    goal: str | None = Field(None, description="A world tool (WORLD.TOOL) whose execution ends the conversation.")
    max_turns: int | None = Field(None, ge=1, description="Turn limit (default: the scripted turns, or 4 with a simulator).")
    fresh_sessions: bool = Field(False, description="Each turn starts the agent afresh with only that turn's message, "
                                 "the workspace kept (Harbor's multi-step tasks): steps, not a conversation, so any "
                                 "agent can run it; no history, no simulator.")

    @model_validator(mode="after")
    def _shape(self) -> "ConversationSpec":
        if not self.turns and self.simulator is None:
            raise ValueError("a conversation needs scripted `turns` or a `simulator`")
        if self.turns and (self.turns[0].reply or self.turns[0].otherwise is not None):
            raise ValueError("turns[0] cannot have `reply`/`otherwise`: there is no agent turn before it to key on "
                             "(give `user`, or nothing for the task's prompt)")
        if self.fresh_sessions and (self.history or self.simulator is not None):
            raise ValueError("fresh_sessions starts the agent afresh every turn: a `history` or a `simulator` (which "
                             "need one session) cannot go with it")
        for i, t in enumerate(self.turns[1:], start=1):
            if t.user is None and not t.reply and t.otherwise is None:
                raise ValueError(f"turns[{i}] needs `user` (fixed text) or `reply` rules (keyed on the agent's "
                                 "previous turn)")
        return self

    @property
    def turn_limit(self) -> int:
        return self.max_turns or (len(self.turns) if self.simulator is None else len(self.turns) + 4)

    def turn_predicates(self) -> dict[int, list[PredicateSpec]]:
        """Turn number (from 1) -> predicates over the state after it."""
        return {i + 1: list(t.predicates) for i, t in enumerate(self.turns) if t.predicates}


#: why a conversation ended (recorded with the attempt)
ENDED_BY = ("turns_done", "goal", "stop_word", "turn_limit", "budget", "off_script", "agent_failed")
