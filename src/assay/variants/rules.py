"""The variant rules file: how counterfactual variants are derived from a task, and what each
one is expected to do.

    rules:
      - id: hint-removed
        steps: [{drop_words: [dinner]}]
        expect: same                      # the verifier does not change
      - id: opaque-no-hint
        steps: [{drop_words: [dinner]}, {swap: {from: Harbor Dumpling House, to: Xinghe Trading}}]
        expect: {behaviour: clarify, reason_code: ambiguous_merchant}

A rule is a list of steps applied in order to the prompt (a ``swap`` also rewrites the expected
values, so the verifier follows the substitution). ``expect`` is declared per rule, never
guessed: ``same`` keeps the task's verifier, ``clarify``/``refuse`` turn the variant into a
restraint case that must ask or refuse and change nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, PrivateAttr, Tag, ValidationError, field_validator

from assay.errors import SpecError, SpecProblem
from assay.spec.digest import sha256_json
from assay.spec.user_file import UserFile, read_user_yaml
from assay.spec.task import check_id
from assay.spec.worlds import REASON_CODE


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DropWords(_Step):
    """Remove hint words (whole words, any case) the user added for the model's sake."""

    drop_words: list[str] = Field(min_length=1)


class ReorderClauses(_Step):
    """Reverse the order of the prompt's comma/semicolon separated clauses."""

    reorder_clauses: Literal[True] = True


class Strip(_Step):
    """Remove whitespace and/or punctuation (punctuation between two digits is kept: 32.5, 2026-03-14)."""

    strip: list[Literal["spaces", "punctuation"]] = Field(min_length=1)


class SwapPair(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    from_: str = Field(alias="from", min_length=1)
    to: str = Field(min_length=1)


class Swap(_Step):
    """Replace a literal (e.g. a merchant with an opaque one) in the prompt *and* the expected values."""

    swap: SwapPair


class NumberFormat(_Step):
    """Rewrite amounts (dates untouched): ``two_decimals`` 186 -> 186.00, ``decimal_comma`` 1234.5 ->
    1.234,50, ``grouped`` 12345 -> 12,345."""

    number_format: Literal["two_decimals", "decimal_comma", "grouped"]


class Glossary(_Step):
    """Translate fixed terms (whole words, any case), longest first."""

    glossary: dict[str, str] = Field(min_length=1)


_STEPS: dict[str, type[_Step]] = {"drop_words": DropWords, "reorder_clauses": ReorderClauses, "strip": Strip,
                                  "swap": Swap, "number_format": NumberFormat, "glossary": Glossary}


def _step_kind(value: Any) -> str | None:
    """A step is named by its one key; anything else is one error listing the steps (not one per kind)."""
    if isinstance(value, _Step):
        return next(k for k, cls in _STEPS.items() if isinstance(value, cls))
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _STEPS:
        return str(next(iter(value)))
    return None


Step = Annotated[Union[tuple(Annotated[cls, Tag(name)] for name, cls in _STEPS.items())],  # type: ignore[misc]
                 Discriminator(_step_kind, custom_error_type="unknown_step",
                               custom_error_message=f"a step is a mapping of one key, one of: {', '.join(_STEPS)}")]


class ExpectChange(BaseModel):
    """The variant must no longer act: ask (``clarify``) or refuse, with a stable reason code."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    behaviour: Literal["clarify", "refuse"]
    reason_code: str = Field(pattern=REASON_CODE)
    question: str = Field("", description="What the reference solution asks or says (default from the rule).")
    category: str | None = Field(None, description="Category the variant scores under (default: the base task's).")


class VariantRule(BaseModel):
    """One declared rule: its steps, the tasks it applies to, and the behaviour it expects."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Rule id; the variant task is named TASK--RULE.")
    steps: list[Step] = Field(min_length=1)
    expect: Annotated[Union[Literal["same"], ExpectChange], Field(description="same, or a changed behaviour.")] = "same"
    tasks: list[str] | None = Field(None, description="Task ids this rule applies to (default: every task given).")
    note: str = ""

    _check = field_validator("id")(lambda cls, v: check_id(v, "rule id"))

    def digest(self) -> str:
        """What the rule says, hashed: bound to every variant it made."""
        return sha256_json(self.model_dump(mode="json", by_alias=True))

    def applies_to(self, task_id: str) -> bool:
        return self.tasks is None or task_id in self.tasks


class RuleSet(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: list[VariantRule] = Field(min_length=1)
    _file: UserFile | None = PrivateAttr(None)  # where the rules were read, to name it in later problems

    def unknown_tasks(self, given: set[str]) -> SpecError | None:
        """Task ids the rules name that are not among ``given``: one problem per rule, naming the file."""
        problems = []
        for i, rule in enumerate(self.rules):
            unknown = sorted(t for t in rule.tasks or [] if t not in given)
            if unknown:
                loc = ["rules", i, "tasks"]
                where = self._file.where(loc) if self._file else ".".join(map(str, loc))
                problems.append(SpecProblem(str(self._file.path) if self._file else "rules", where,
                                            f"rule {rule.id!r} names task(s) {unknown} not given",
                                            f"pass those task folders or remove them from the rule; given: {sorted(given)}"))
        return SpecError(problems) if problems else None

    @field_validator("rules")
    @classmethod
    def _unique(cls, v: list[VariantRule]) -> list[VariantRule]:
        ids = [r.id for r in v]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"rule ids must be unique; repeated: {dup}")
        return v


def load_rules(path: Path) -> RuleSet:
    """Load a rules file; every problem is one line naming the file, the line, the field and the fix."""
    fix = "see the rule format in docs/variants.md"
    f = read_user_yaml(path, what="rules file", fix="a YAML file with `rules:`")
    try:
        rules = RuleSet.model_validate(f.data)
    except ValidationError as e:
        raise f.invalid(e, fix) from None
    rules._file = f
    return rules
