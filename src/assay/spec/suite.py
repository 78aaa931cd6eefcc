"""The suite file (``suite.yaml``): a versioned set of tasks with frozen category weights."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from assay.spec.budget import Budget, Limits
from assay.spec.environment import EnvironmentSpec
from assay.spec.task import check_id


class Category(BaseModel):
    """A category of tasks; its weight is frozen before any run and bound into the manifest."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    id: str
    weight: float = Field(1.0, gt=0, description="Relative weight in the macro-average.")
    description: str = ""

    _check = field_validator("id")(lambda cls, v: check_id(v, "category id"))


class SuiteSpec(BaseModel):
    """A suite: name, version, categories and where its tasks live."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    name: str = Field(description="Suite name.")
    version: str = Field(description="Suite version; bump when tasks or verifiers change.")
    description: str = ""
    categories: list[Category] = Field(min_length=1)
    tasks_dir: str = Field("tasks", description="Folder holding one sub-folder per task.")
    tasks: list[str] | None = Field(None, description="Task folders to include (default: all).")
    default_budget: Budget | None = Field(None, description="Budget fields applied to every task unless it sets them.")
    default_limits: Limits = Field(default_factory=Limits)
    default_environment: EnvironmentSpec | None = Field(
        None, description="The image of every task that declares no `environment:` (paths relative to suite.yaml).")

    _check = field_validator("name")(lambda cls, v: check_id(v, "suite name"))

    @model_validator(mode="after")
    def _unique(self) -> "SuiteSpec":
        ids = [c.id for c in self.categories]
        if len(set(ids)) != len(ids):
            raise ValueError("category ids must be unique")
        return self

    def weights(self) -> dict[str, float]:
        """Category weights normalised to sum to 1."""
        total = sum(c.weight for c in self.categories)
        return {c.id: c.weight / total for c in self.categories}
