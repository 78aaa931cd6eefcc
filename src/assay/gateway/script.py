"""The scripted model file (``model.yaml``): assistant turns with neutral tool calls.

    turns:
      - text: "optional assistant text"
        tool_calls:
          - {name: shell, arguments: {command: "sed -i 's/a - b/a + b/' calc.py"}}
      - text: "Done."          # a turn without tool_calls ends the conversation

or, for a multi-step task (``conversation.fresh_sessions``), ``steps:``: one such list per step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from assay.errors import SpecError, SpecProblem
from assay.spec.user_file import read_user_yaml


class ScriptToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Neutral tool name (shell, read, write, edit, list) or a world tool WORLD.TOOL.")
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptTurn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = ""
    tool_calls: list[ScriptToolCall] = Field(default_factory=list)


class ModelScript(BaseModel):
    """What the scripted backend answers, turn by turn; or, for a multi-step task whose every step
    starts a new session (``conversation.fresh_sessions``), one list of turns per step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turns: list[ScriptTurn] = Field(default_factory=list)
    steps: list[list[ScriptTurn]] = Field(default_factory=list, description="One list of turns per step of a "
                                          "fresh_sessions task, each answered from its own start.")
    final_text: str = Field("Done.", description="Answer once the conversation is past the last turn.")

    @model_validator(mode="after")
    def _one_form(self) -> "ModelScript":
        if bool(self.turns) == bool(self.steps):
            raise ValueError("give `turns` (one conversation) or `steps` (one list of turns per step of a "
                             "fresh_sessions task), not both and not neither")
        if any(not step for step in self.steps):
            raise ValueError("every step needs at least one turn")
        return self


def load_script(path: Path) -> ModelScript:
    """Load and check a script; problems name the file, the field and the fix."""
    if not path.is_file():
        raise SpecError([SpecProblem(str(path), "", "model script not found", "create it or fix `model_script:`")])
    f = read_user_yaml(path, what="model script", fix="see the scripted model format in docs/gateway.md")
    try:
        return ModelScript.model_validate(f.data)
    except ValidationError as e:
        raise f.invalid(e, "see the scripted model format in docs/gateway.md") from None
