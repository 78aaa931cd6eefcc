"""The scripted model file (``model.yaml``): assistant turns with neutral tool calls.

    turns:
      - text: "optional assistant text"
        tool_calls:
          - {name: shell, arguments: {command: "sed -i 's/a - b/a + b/' calc.py"}}
      - text: "Done."          # a turn without tool_calls ends the conversation
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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
    """What the scripted backend answers, turn by turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turns: list[ScriptTurn] = Field(min_length=1)
    final_text: str = Field("Done.", description="Answer once the conversation is past the last turn.")


def load_script(path: Path) -> ModelScript:
    """Load and check a script; problems name the file, the field and the fix."""
    if not path.is_file():
        raise SpecError([SpecProblem(str(path), "", "model script not found", "create it or fix `model_script:`")])
    f = read_user_yaml(path, what="model script", fix="see the scripted model format in docs/gateway.md")
    try:
        return ModelScript.model_validate(f.data)
    except ValidationError as e:
        raise f.invalid(e, "see the scripted model format in docs/gateway.md") from None
