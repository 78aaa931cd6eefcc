"""What a task says about itself besides its work: difficulty, authors and time estimates, typed
(imported benchmarks carry them: Harbor's ``[metadata]``, Terminal-Bench 1's ``task.yaml``), so a
run's manifest and a reader of it can group and weigh by them rather than dig in free-form data."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Author(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    name: str
    email: str | None = None


class TaskMetadata(BaseModel):
    """Descriptive only: nothing here changes how a trial runs or is judged."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    difficulty: str | None = Field(None, description="As the task's source grades it (e.g. easy, medium, hard).")
    authors: list[Author] = Field(default_factory=list)
    expert_time_min: float | None = Field(None, ge=0, description="Minutes an expert would take, by the source's "
                                          "estimate (Harbor/Terminal-Bench `expert_time_estimate_min`).")
    junior_time_min: float | None = Field(None, ge=0, description="Minutes a junior engineer would take "
                                          "(`junior_time_estimate_min`).")
    estimated_duration_s: float | None = Field(None, ge=0, description="Seconds an agent run is expected to take "
                                               "(Terminal-Bench 1 `estimated_duration_sec`).")


def metadata_from(source: dict[str, object]) -> tuple[TaskMetadata | None, list[str]]:
    """The typed metadata an importer can read from a source's descriptive fields, and a line for
    each value it could not read as its type (kept as it was in ``extra.source.metadata``)."""
    problems: list[str] = []
    fields: dict[str, object] = {}
    if isinstance(source.get("difficulty"), str) and str(source["difficulty"]).strip():
        fields["difficulty"] = str(source["difficulty"]).strip()
    name, email = source.get("author_name"), source.get("author_email")
    if isinstance(name, str) and name.strip():
        fields["authors"] = [Author(name=name.strip(), email=email.strip() if isinstance(email, str) and email.strip()
                                    else None)]
    for key, field in (("expert_time_estimate_min", "expert_time_min"), ("junior_time_estimate_min", "junior_time_min"),
                       ("estimated_duration_sec", "estimated_duration_s")):
        value = source.get(key)
        if value in (None, ""):
            continue
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            number = -1.0
        if number != number or number < 0 or isinstance(value, bool):  # NaN, negative, a bool
            problems.append(f"{key} {value!r} is not a number of minutes or seconds (kept in extra.source.metadata)")
            continue
        fields[field] = number
    return (TaskMetadata(**fields) if fields else None), problems  # type: ignore[arg-type]
