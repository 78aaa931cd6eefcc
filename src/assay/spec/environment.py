"""A task's environment (``environment:`` in task.yaml, ``default_environment:`` in suite.yaml).

Either a Debian base with its packages, pip packages and shell steps, or a Dockerfile read as
one (:mod:`assay.spec.environment_dockerfile`). Both become the same build plan in
:mod:`assay.environments`: a content-addressed root filesystem the task's sandboxes run over.
A ``FROM`` that cannot be fetched here maps to ``base`` and the mapping is recorded as a
deviation, never silent.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: the Debian releases a base may name (built with mmdebstrap from the host's Debian mirror)
DEBIAN_RELEASES = ("bookworm", "trixie", "bullseye")
_BASE_RE = re.compile(r"^debian:([a-z]+)(-slim)?$")
DEBIAN_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]*(:[a-z0-9]+)?(=[A-Za-z0-9.+~:-]+)?$")


def debian_release(base: str) -> str:
    """``debian:bookworm`` -> ``bookworm``; ValueError naming the allowed forms otherwise."""
    m = _BASE_RE.match(base)
    if not m or m.group(1) not in DEBIAN_RELEASES:
        raise ValueError(f"base {base!r} is not a Debian release this builder makes; use one of "
                         + ", ".join(f"debian:{r}" for r in DEBIAN_RELEASES))
    return m.group(1)


class EnvironmentSpec(BaseModel):
    """What a task's image is made of: a base plus steps, or a Dockerfile."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    extends: Literal["environment"] | None = Field(
        None, description="verifier_environment only: `environment` builds the verifier's image over the task's own "
        "image (then its packages, pip and steps), for what a test script installs before the tests (a compiler, "
        "pytest's plugins) that the agent's image never holds.")
    base: str | None = Field(None, description="Debian base, e.g. debian:bookworm. With a Dockerfile: the base its "
                             "FROM maps to when that image cannot be fetched here (default debian:bookworm).")
    packages: list[str] = Field(default_factory=list, description="Debian packages installed into the base.")
    pip: list[str] = Field(default_factory=list, description="pip requirements installed with the image's python3 "
                           "(the base then gets python3 and python3-pip).")
    steps: list[str] = Field(default_factory=list, description="Shell commands run as root in the image being built, "
                             "with the network open, in order.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment variables of the image.")
    dockerfile: str | None = Field(None, description="A Dockerfile (relative to the file declaring it) read as one: "
                                   "FROM, RUN, COPY/ADD of local files, WORKDIR, ENV, ARG, USER.")
    context: str = Field(".", description="Folder COPY sources are relative to (relative to the file declaring it).")
    build_timeout_s: float = Field(1800, gt=0, description="Time allowed for the whole build of this image.")

    @field_validator("base")
    @classmethod
    def _base(cls, v: str | None) -> str | None:
        if v is not None:
            debian_release(v)
        return v

    @field_validator("packages")
    @classmethod
    def _packages(cls, v: list[str]) -> list[str]:
        for p in v:
            if not DEBIAN_PACKAGE.match(p):
                raise ValueError(f"{p!r} is not a Debian package name (lowercase letters, digits, + - .)")
        return v

    @model_validator(mode="after")
    def _one_form(self) -> "EnvironmentSpec":
        if self.extends is not None:
            if self.dockerfile is not None or self.base is not None:
                raise ValueError("an environment that extends the task's image takes no `base` or `dockerfile` "
                                 "of its own; keep packages/pip/steps/env, or drop `extends`")
            return self
        if self.dockerfile is not None and (self.packages or self.pip or self.steps or self.env):
            raise ValueError("an environment is either a Dockerfile or a base with packages/pip/steps/env, not both; "
                             "move the steps into the Dockerfile")
        if self.dockerfile is None and self.base is None:
            raise ValueError("an environment needs `base:` (e.g. debian:bookworm) or `dockerfile:`")
        return self

    def release(self) -> str:
        """The Debian release the image starts from."""
        return debian_release(self.base or "debian:bookworm")


class EnvironmentRecord(BaseModel):
    """What the manifest records of a task's image (law 4)."""

    model_config = ConfigDict(allow_inf_nan=False, frozen=True)

    image: str = Field(description="name@sha256:<digest> of the image in the local store.")
    rootfs_sha256: str = Field(description="Digest over every file of the built root filesystem.")
    deviations: list[str] = Field(default_factory=list, description="Where the image differs from what was declared "
                                  "(a FROM mapped to a Debian base, an instruction honoured differently).")
    workdir: str | None = Field(None, description="The image's WORKDIR (where the workspace is seen unless the task "
                                "sets its own workdir).")
