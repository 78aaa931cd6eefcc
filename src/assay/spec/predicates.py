"""Predicate specs: the declarative half of the verifier, as it appears in ``task.yaml``.

Each predicate kind is a small pydantic model known by its ``kind``; the verifier side
(:mod:`assay.verify.registry`) holds the code that evaluates it. Built-in kinds are every model
of :data:`BUILTIN_SPEC_MODULES`; a plugin declares a kind whole (:class:`PredicateKind`: spec and
evaluator together) under one entry point. No if-chain anywhere grows.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Annotated, Any, Awaitable, Callable, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from assay.untrusted.bounded_re import Pattern

from assay.registry import Registry


class PredicateSpec(BaseModel):
    """Common fields of every predicate.

    A predicate is either *required* (all required predicates must hold for a strict pass) or
    *weighted* (it counts towards the 0-100 diagnostic score). Required predicates also count
    towards the diagnostic score with their weight.
    """

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)
    kind_name: ClassVar[str] = ""

    id: str = Field(description="Stable identifier, unique within the task; shown in results.")
    required: bool = Field(True, description="If true, the task strictly passes only when this holds.")
    weight: float = Field(1.0, ge=0, description="Weight in the diagnostic score (0-100).")
    description: str = Field("", description="What this predicate checks, for humans.")

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        kind_field = cls.model_fields.get("kind")
        if kind_field is not None and kind_field.default:
            cls.kind_name = kind_field.default


@dataclass(frozen=True)
class PredicateKind:
    """A predicate kind declared whole: its spec model and its evaluator, together.

    Third parties publish one of these per kind under the ``assay.predicates`` entry-point group
    (or call :func:`assay.verify.registry.register_predicate`); the task loader takes the spec
    half, the verifier the evaluator half (``async evaluate(spec, ctx) -> Outcome``).
    """

    spec: type[PredicateSpec]
    evaluate: Callable[..., Awaitable[Any]]

    @property
    def kind(self) -> str:
        return self.spec.kind_name


#: modules defining the built-in predicate spec models (every PredicateSpec subclass with a kind in them)
BUILTIN_SPEC_MODULES = ("assay.spec.predicates", "assay.spec.world_predicates", "assay.spec.judge",
                        "assay.spec.io_predicates", "assay.spec.web_predicates")


def _builtin_specs() -> dict[str, type[PredicateSpec]]:
    table: dict[str, type[PredicateSpec]] = {}
    for name in BUILTIN_SPEC_MODULES:
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, PredicateSpec) and obj.kind_name
                    and obj.__module__ == name):
                table[obj.kind_name] = obj
    return table


def _spec_of(declared: Any) -> type[PredicateSpec]:
    spec = getattr(declared, "spec", declared)
    if not (isinstance(spec, type) and issubclass(spec, PredicateSpec) and spec.kind_name):
        raise TypeError(f"{declared!r} declares no predicate spec model with a 'kind' literal")
    return spec


#: predicate spec models by kind (entry-point group ``assay.predicates``: a :class:`PredicateKind`)
PREDICATE_SPECS: Registry[type[PredicateSpec]] = Registry("predicate kind", "assay.predicates", _builtin_specs,
                                                          from_entry_point=_spec_of)


def register_predicate_spec(spec: type[PredicateSpec], *, replace: bool = False) -> type[PredicateSpec]:
    """Make a third-party predicate kind loadable in task files (its evaluator registers in verify)."""
    return PREDICATE_SPECS.register(_spec_of(spec).kind_name, spec, replace=replace)


def registered_kinds() -> dict[str, type[PredicateSpec]]:
    """All predicate spec models known now (built-ins and plugins), by kind."""
    return PREDICATE_SPECS.as_dict()


_ADAPTER_CACHE: dict[tuple[tuple[str, int], ...], TypeAdapter[Any]] = {}


def predicate_adapter() -> TypeAdapter[Any]:
    """A TypeAdapter over the discriminated union of every registered predicate kind."""
    table = registered_kinds()
    key = tuple((k, id(table[k])) for k in sorted(table))
    if key not in _ADAPTER_CACHE:
        members = tuple(table[k] for k, _ in key)
        union = members[0] if len(members) == 1 else Union[members]  # type: ignore[valid-type]
        _ADAPTER_CACHE[key] = TypeAdapter(list[Annotated[union, Field(discriminator="kind")]])
    return _ADAPTER_CACHE[key]


# ----------------------------------------------------------------------------- files
class FileExists(PredicateSpec):
    """The path exists in the final workspace (a symlink escaping the workspace does not count)."""

    kind: Literal["file_exists"] = "file_exists"
    path: str = Field(description="Path relative to the workspace.")


class FileAbsent(PredicateSpec):
    """The path does not exist in the final workspace."""

    kind: Literal["file_absent"] = "file_absent"
    path: str


class FileEquals(PredicateSpec):
    """The file's content equals ``text``, or the content of ``expected_file`` (a hidden file)."""

    kind: Literal["file_equals"] = "file_equals"
    path: str
    text: str | None = None
    expected_file: str | None = Field(
        None, description="Path under the task's hidden/ directory holding the expected content."
    )
    strip: bool = Field(True, description="Compare with surrounding whitespace stripped.")

    @model_validator(mode="after")
    def _one_source(self) -> "FileEquals":
        if (self.text is None) == (self.expected_file is None):
            raise ValueError("give exactly one of 'text' or 'expected_file'")
        return self


class FileContains(PredicateSpec):
    """The file contains ``text`` (all of them, when a list is given)."""

    kind: Literal["file_contains"] = "file_contains"
    path: str
    text: str | list[str]
    ignore_case: bool = False


class FileMatches(PredicateSpec):
    """The file's content matches the regular expression (``re.search``, multiline)."""

    kind: Literal["file_matches"] = "file_matches"
    path: str
    regex: Pattern


class FileDigest(PredicateSpec):
    """The file's SHA-256 equals the given digest."""

    kind: Literal["file_digest"] = "file_digest"
    path: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class Unchanged(PredicateSpec):
    """Paths matching these globs are byte-identical to the start of the trial, and none
    were added or removed. ``["**"]`` means "the agent modified nothing"."""

    kind: Literal["unchanged"] = "unchanged"
    paths: list[str] = Field(default_factory=lambda: ["**"], description="Glob patterns.")
    exclude: list[str] = Field(default_factory=list, description="Glob patterns to ignore.")


class JsonSchemaValid(PredicateSpec):
    """The file parses as JSON (or JSON Lines) and validates against the schema."""

    kind: Literal["json_schema"] = "json_schema"
    path: str
    json_schema: dict[str, Any] | None = Field(None, alias="schema")
    schema_file: str | None = Field(None, description="Schema file under the task's hidden/ dir.")
    lines: bool = Field(False, description="Validate each line of a JSON Lines file.")

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _one_source(self) -> "JsonSchemaValid":
        if (self.json_schema is None) == (self.schema_file is None):
            raise ValueError("give exactly one of 'schema' or 'schema_file'")
        return self


class JsonValue(PredicateSpec):
    """Values at JSON pointers in the file equal the expected ones."""

    kind: Literal["json_value"] = "json_value"
    path: str
    expect: dict[str, Any] = Field(description="JSON pointer (e.g. /total) -> expected value.")
    tolerance: float = Field(0.0, ge=0, description="Absolute tolerance for numbers.")


# ----------------------------------------------------------------------------- commands
class CommandCheck(PredicateSpec):
    """Run a command in the verifier sandbox and check its exit code and output."""

    kind: Literal["command"] = "command"
    cmd: str | list[str] = Field(description="argv list, or a string run by /bin/sh -c.")
    cwd: Literal["workspace", "hidden"] = "workspace"
    expect_exit: int | None = 0
    stdout_contains: str | None = None
    stdout_matches: Pattern | None = None
    timeout_s: float = Field(60, gt=0)


class PytestCheck(PredicateSpec):
    """Run hidden pytest tests against the final workspace.

    The tests run from the verifier's hidden directory with Python in isolated mode; the
    workspace is appended to the *end* of ``sys.path`` so nothing the agent wrote can shadow
    pytest, the standard library or the tests. The result is read from a JUnit report the
    harness reads back, not from the exit code alone.
    """

    kind: Literal["pytest"] = "pytest"
    tests: str = Field("tests", description="Directory or file under hidden/ holding the tests.")
    min_tests: int = Field(1, ge=1, description="Fewer collected tests than this is a failure.")
    timeout_s: float = Field(120, gt=0)


class RewardFile(PredicateSpec):
    """Run a task's own test script (Harbor's ``tests/test.sh``, Terminal-Bench 1's
    ``run-tests.sh``) in the verifier sandbox over the snapshot, inside the task's image, and read
    the reward it writes to ``/logs/verifier/reward.txt`` (a number) or ``reward.json`` (numbers by
    name), or with ``reads: pytest_summary`` the test results its output lists."""

    kind: Literal["reward_file"] = "reward_file"
    tests: str | None = Field("tests", description="Folder under hidden/ seen at /tests (the script's own test "
                              "files); null: the verifier's image holds them at /tests itself (Harbor's separate "
                              "verifier), nothing is mounted over it.")
    script: str = Field("test.sh", description="The script inside `tests`, run by its #! line (else /bin/sh).")
    threshold: float = Field(1.0, description="Pass means the reward is at least this.")
    key: str | None = Field(None, description="In reward.json: the value compared; None: every value must reach "
                            "the threshold.")
    reads: Literal["reward", "pytest_summary"] = Field(
        "reward", description="reward: the reward file decides; pytest_summary: the script's output does, read "
        "as Terminal-Bench 1's pytest parser reads it (the results after 'short test summary info', every one "
        "PASSED, at least one); no reward file is read then.")
    timeout_s: float = Field(120, gt=0)


class FailPassLists(PredicateSpec):
    """SWE-bench's grading: run the repository's own tests named by ``fail_to_pass`` and
    ``pass_to_pass`` in the verifier's copy of the workspace, after the hidden test patch's files
    (``restore``) are written over it; pass only when every named test passes."""

    kind: Literal["test_lists"] = "test_lists"
    fail_to_pass: list[str] = Field(min_length=1, description="Test ids that must pass (they failed before the fix).")
    pass_to_pass: list[str] = Field(default_factory=list, description="Test ids that must still pass.")
    restore: str = Field("repo_tests", description="Folder under hidden/: files written over the verifier's copy "
                         "by path (the test patch applied, every conftest.py and the pytest config).")
    deleted: list[str] = Field(default_factory=list, description="Paths the test patch deletes.")
    inifile: str | None = Field(None, description="The repository's pytest config file (None: an empty one).")
    pythonpath: list[str] = Field(default_factory=list, description="Workspace folders put on sys.path before "
                                  "site-packages (the repository is not installed).")
    timeout_s: float = Field(600, gt=0)


class PythonPlugin(PredicateSpec):
    """Call ``function(ctx)`` from a Python file of the task's verifier code.

    The function gets a :class:`assay.verify.PredicateContext` and returns a bool or a
    ``(bool, evidence_dict)`` tuple. An exception is a verifier crash (infra_error).
    """

    kind: Literal["python"] = "python"
    file: str = Field(description="Python file under the task's verify/ directory.")
    function: str = "check"
    args: dict[str, Any] = Field(default_factory=dict)


BUILTIN_KINDS: tuple[type[PredicateSpec], ...] = (
    FileExists,
    FileAbsent,
    FileEquals,
    FileContains,
    FileMatches,
    FileDigest,
    Unchanged,
    JsonSchemaValid,
    JsonValue,
    CommandCheck,
    PytestCheck,
    PythonPlugin,
)
