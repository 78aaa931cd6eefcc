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

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.errors import SpecError, SpecProblem


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
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise SpecError([SpecProblem(str(path), "", f"not valid YAML: {e}", "fix the YAML syntax")]) from None
    try:
        return ModelScript.model_validate(data)
    except ValidationError as e:
        raise SpecError([SpecProblem(str(path), ".".join(str(x) for x in err["loc"]), err["msg"],
                                     "see the scripted model format in docs/gateway.md")
                         for err in e.errors()]) from None
