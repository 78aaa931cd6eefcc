"""The ``io_cases`` predicate: run the agent's code on given inputs, compare outside.

The harness runs a driver per case in the verifier's sandbox with that case's inputs only
(arguments, stdin, input files), captures what comes out and compares it, in the harness,
against expected values the sandbox never sees. The code under test can print anything, but it
cannot read the answer it is judged against: trust level ``outside_oracle``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.untrusted.bounded_re import Pattern

from assay.spec.predicates import PredicateSpec


class IoCase(BaseModel):
    """One input and what must come out of it."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    id: str = Field(description="Shown in the evidence; unique within the predicate.")
    args: list[Any] = Field(default_factory=list,
                            description="`run`: extra argv words (may use {case_dir}); `call`: positional arguments.")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="`call`: keyword arguments.")
    stdin: str | None = Field(None, description="`run`: text fed to the program's standard input.")
    files: dict[str, str] = Field(default_factory=dict,
                                  description="Input files (relative path -> text) placed in {case_dir}.")
    stdout: str | None = Field(None, description="`run`: expected standard output (compared after strip).")
    stdout_matches: Pattern | None = Field(None, description="`run`: regular expression the whole output must match.")
    exit_code: int = Field(0, description="`run`: expected exit status.")
    returns: Any = Field(None, description="`call`: expected return value, compared as JSON.")
    raises: str | None = Field(None, description="`call`: expected exception class name instead of a value.")

    @model_validator(mode="after")
    def _safe_files(self) -> "IoCase":
        for rel in self.files:
            parts = rel.split("/")
            if rel.startswith("/") or ".." in parts or not rel:
                raise ValueError(f"input file {rel!r} must be a relative path inside the case directory")
        return self


class IoCases(PredicateSpec):
    """Run the agent's program (``run``) or function (``call``) once per case and compare the
    outputs with expected values held by the harness. Every case must hold."""

    kind: Literal["io_cases"] = "io_cases"
    run: list[str] | None = Field(None, description="argv of the program, run in the workspace copy; {python} is the "
                                                    "verifier's Python. Each case's `args` are appended.")
    call: str | None = Field(None, description="`module:function` imported from the workspace and called per case.")
    cases: list[IoCase] = Field(default_factory=list, description="The cases, inline.")
    cases_file: str | None = Field(None, description="YAML or JSON list of cases under the task's hidden/ directory.")
    tolerance: float = Field(0.0, ge=0, description="Absolute tolerance for numbers in `returns`.")
    timeout_s: float = Field(10, gt=0, description="Time allowed per case.")

    @model_validator(mode="after")
    def _one_each(self) -> "IoCases":
        if (self.run is None) == (self.call is None):
            raise ValueError("give exactly one of 'run' (a program) or 'call' (module:function)")
        if self.call is not None and (":" not in self.call or not all(self.call.split(":", 1))):
            raise ValueError(f"'call' must be 'module:function', got {self.call!r}")
        if bool(self.cases) == (self.cases_file is not None):
            raise ValueError("give exactly one of 'cases' (inline) or 'cases_file' (under hidden/)")
        for c in self.cases:
            check_case(c, call=self.call is not None)
        ids = [c.id for c in self.cases]
        if len(ids) != len(set(ids)):
            raise ValueError("case ids must be unique")
        return self


def check_case(case: IoCase, *, call: bool) -> None:
    """A case must say what it expects, in the form its driver produces."""
    if call and "returns" not in case.model_fields_set and case.raises is None:
        raise ValueError(f"case {case.id!r}: a `call` case needs `returns` or `raises`")
    if call and (case.stdin is not None or case.stdout is not None or case.stdout_matches is not None):
        raise ValueError(f"case {case.id!r}: stdin/stdout belong to `run` cases; a `call` case uses args/returns")
    if not call and ("returns" in case.model_fields_set or case.raises is not None or case.kwargs):
        raise ValueError(f"case {case.id!r}: returns/raises/kwargs belong to `call` cases; a `run` case uses "
                         "args/stdin/stdout/exit_code")
