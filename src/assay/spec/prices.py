"""The gateway's price table (USD per million tokens, per model id; ``"*"`` for any model), checked
when it is read: a negative price would make ``--max-cost`` unreachable, a typo'd key would price
a kind of token at zero, a non-number would break every model call of the run."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

PRICE_FIX = ("a mapping MODEL_ID (or '*') -> {input, output, cached}, each a number >= 0 in USD per million "
             "tokens (cached optional, default input)")


class ModelPrice(BaseModel):
    """What one model's tokens cost."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    input: float = Field(ge=0, description="USD per million uncached input tokens.")
    output: float = Field(ge=0, description="USD per million output tokens.")
    cached: float | None = Field(None, ge=0,
                                 description="USD per million cached input tokens (default: the input price).")
    nominal: bool = Field(False, description="True for made-up prices (the scripted model's).")


_TABLE = TypeAdapter(dict[str, ModelPrice])


def check_prices(data: Any) -> dict[str, Any]:
    """The table as plain data, every entry checked; raises pydantic's ValidationError (the caller
    names the file) or TypeError when the top level is not a mapping."""
    if not isinstance(data, dict):
        raise TypeError("the price table must be a mapping of model ids")
    table = _TABLE.validate_python(data)
    return {model: {k: v for k, v in p.model_dump(exclude_none=True).items() if k != "nominal" or v}
            for model, p in table.items()}


def price_problem(data: Any) -> str | None:
    """What is wrong with a price table, in one line, or None (for a check at run time)."""
    try:
        check_prices(data)
    except TypeError as e:
        return str(e)
    except ValidationError as e:
        first = e.errors()[0]
        return f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    return None
