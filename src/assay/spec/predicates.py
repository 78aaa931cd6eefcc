"""Predicate specs: the declarative half of the verifier, as it appears in ``task.yaml``.

Each predicate kind is a small pydantic model registered by its ``kind``; the verifier side
(:mod:`assay.verify.predicates`) registers the code that evaluates it. A new predicate kind is
one new model here (or in a plugin) plus one evaluator: no if-chain anywhere grows.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

_SPEC_REGISTRY: dict[str, type["PredicateSpec"]] = {}


class PredicateSpec(BaseModel):
    """Common fields of every predicate.

    A predicate is either *required* (all required predicates must hold for a strict pass) or
    *weighted* (it counts towards the 0-100 diagnostic score). Required predicates also count
    towards the diagnostic score with their weight.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind_name: ClassVar[str] = ""

    id: str = Field(description="Stable identifier, unique within the task; shown in results.")
    required: bool = Field(True, description="If true, the task strictly passes only when this holds.")
    weight: float = Field(1.0, ge=0, description="Weight in the diagnostic score (0-100).")
    description: str = Field("", description="What this predicate checks, for humans.")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        kind_field = cls.model_fields.get("kind")
        if kind_field is not None and kind_field.default:
            cls.kind_name = kind_field.default
            _SPEC_REGISTRY[kind_field.default] = cls


def registered_kinds() -> dict[str, type[PredicateSpec]]:
    """All predicate spec models known now (built-ins and plugins), by kind."""
    return dict(_SPEC_REGISTRY)


_ADAPTER_CACHE: dict[tuple[str, ...], TypeAdapter[Any]] = {}


#: modules defining more predicate spec models, imported before the first task loads
EXTENSION_MODULES = ("assay.spec.world_predicates",)
_extensions_loaded = False


def load_extensions() -> None:
    """Import predicate spec models from assay's extension modules and third-party entry points."""
    global _extensions_loaded
    if _extensions_loaded:
        return
    _extensions_loaded = True
    from importlib.metadata import entry_points

    from assay._optional import optional_import

    for mod in EXTENSION_MODULES:
        optional_import(mod)
    for ep in entry_points(group="assay.predicate_specs"):
        ep.load()


def predicate_adapter() -> TypeAdapter[Any]:
    """A TypeAdapter over the discriminated union of every registered predicate kind."""
    load_extensions()
    kinds = tuple(sorted(_SPEC_REGISTRY))
    if kinds not in _ADAPTER_CACHE:
        members = tuple(_SPEC_REGISTRY[k] for k in kinds)
        union = members[0] if len(members) == 1 else Union[members]  # type: ignore[valid-type]
        from typing import Annotated

        _ADAPTER_CACHE[kinds] = TypeAdapter(list[Annotated[union, Field(discriminator="kind")]])
    return _ADAPTER_CACHE[kinds]


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
    regex: str


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

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

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
    stdout_matches: str | None = None
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
