"""What each phase of a Harbor task gets besides its files: the network (``network_mode``, the
environment's baseline and the agent's override) and, for a separate verifier
(``[verifier] environment_mode = "separate"`` or a ``[verifier.environment]`` table), the verifier's
own image built from ``tests/`` (Harbor: ``tests/Dockerfile`` with ``tests/`` as its context, which
puts ``/tests/test.sh`` in place itself; nothing is uploaded over it).

assay's verifier always runs in a sandbox of its own with no network, so a separate verifier maps
closely: its image is built beside the agent's and the reward script runs from it. What differs is
said: Harbor hands it the declared ``artifacts`` only, assay the whole final workspace at the path
the agent saw it; an artifact outside that workspace is not carried.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.importers.common import dockerfile_environment, table
from assay.importers.report import TaskReport
from assay.spec.environment_dockerfile import DockerfileError, parse

MODES = ("public", "no-network", "allowlist")


def prebuilt_from_dockerfile(image: Any, folder: Path, table_name: str, rep: TaskReport) -> bool:
    """A ``docker_image`` (a prebuilt image, which cannot be pulled here) beside the Dockerfile it
    was built from: built from that Dockerfile, as Harbor does with ``force_build`` (and its
    container backends whenever the Dockerfile exists), and said. False (refused): no Dockerfile."""
    where = f"{folder.name}/Dockerfile"
    if not (folder / "Dockerfile").is_file():
        rep.refuse(f"{table_name}.docker_image {image!r}: a prebuilt image cannot be fetched here, and there is no "
                   f"{where} to build it from")
        return False
    rep.approximated.append(f"{table_name}.docker_image {image!r} is not fetched here: the image is built from "
                            f"{where} instead (Harbor's force_build), so it can differ from the prebuilt one where "
                            "that Dockerfile's steps fetch moving versions")
    return True


def separate_verifier(ver_t: dict[str, Any], src: Path, rep: TaskReport) -> bool | None:
    """Whether the verifier runs in its own environment (None: refused, as Harbor refuses it)."""
    mode = ver_t.get("environment_mode")
    own = ver_t.get("environment")
    if mode not in (None, "shared", "separate"):
        rep.refuse(f"verifier.environment_mode = {mode!r}: Harbor knows 'shared' and 'separate'")
        return None
    if mode == "shared" and isinstance(own, dict):
        rep.refuse("verifier.environment_mode = 'shared' with a [verifier.environment] table: Harbor refuses it "
                   "(the table means a separate verifier)")
        return None
    if mode != "separate" and not isinstance(own, dict):
        return False
    if isinstance(own, dict) and own.get("docker_image") and not prebuilt_from_dockerfile(
            own["docker_image"], src / "tests", "verifier.environment", rep):
        return None
    if not (src / "tests" / "Dockerfile").is_file():
        rep.refuse("a separate verifier without tests/Dockerfile: Harbor builds the verifier's image from tests/ "
                   "and refuses a separate verifier with nothing to build")
        return None
    return True


def verifier_environment(src: Path, dst: Path, ver_t: dict[str, Any], rep: TaskReport,
                         build_timeout: float | None) -> dict[str, Any] | None:
    """The task's ``verifier_environment:`` built from ``tests/`` (copied to hidden/tests, where
    the agent never reaches), or None when assay's Dockerfile reader refuses a line."""
    env = dockerfile_environment(dst, src / "tests" / "Dockerfile", src / "tests", rep, build_timeout,
                                 into="hidden/tests", label="verifier image: ")
    if env is None:
        return None
    rep.mapped.append("verifier.environment_mode = 'separate' -> verifier_environment (tests/Dockerfile, context "
                      "tests/: the verifier's own image; the reward script runs from its /tests)")
    own = table(ver_t, "environment")
    if own:
        rep.approximated.append("verifier.environment (" + ", ".join(sorted(own)) + "): the verifier's sandbox takes "
                                "the task's limits and never has the network here")
    return env


def carried_artifacts(doc: dict[str, Any], dockerfile: Path, env_t: dict[str, Any], rep: TaskReport) -> None:
    """Harbor hands a separate verifier the declared ``artifacts`` only; assay's verifier sees the
    whole final workspace where the agent saw it, so an artifact inside it is carried and one
    outside it is not (said, with the path)."""
    listed = doc.get("artifacts") or []
    if not isinstance(listed, list):
        rep.unmapped.append("artifacts is not a list: not read")
        return
    workdir = env_t.get("workdir") if isinstance(env_t.get("workdir"), str) else _image_workdir(dockerfile)
    outside = []
    for item in listed:
        path = item.get("source") if isinstance(item, dict) else item
        if not isinstance(path, str):
            continue
        if workdir is None or not (path == workdir or path.startswith(workdir.rstrip("/") + "/")):
            outside.append(path)
    rep.approximated.append("artifacts: the verifier sees the whole final workspace"
                            + (f" ({workdir})" if workdir else "") + ", not only the declared artifacts")
    if outside:
        rep.unmapped.append(f"artifacts outside the workspace ({', '.join(outside)}): assay's verifier sees the "
                            "final workspace only, so these are not carried to it")


def _image_workdir(dockerfile: Path) -> str | None:
    try:
        steps = parse(dockerfile).image_steps()
    except (DockerfileError, OSError, UnicodeDecodeError):
        return None
    dirs = [s.dest for s in steps if s.kind == "workdir" and s.dest.startswith("/")]
    return dirs[-1] if dirs else None


def network(env_t: dict[str, Any], agent_t: dict[str, Any], ver_t: dict[str, Any],
            rep: TaskReport) -> bool | None:
    """The task's ``allow_internet`` from ``network_mode`` (the agent's override, else the
    environment's baseline), or from the older ``allow_internet``: True/False, None when the task
    says neither (or a mode Harbor does not know: the task is refused in ``rep``)."""
    baseline, phase = env_t.get("network_mode"), agent_t.get("network_mode")
    for where, mode in (("environment", baseline), ("agent", phase), ("verifier", ver_t.get("network_mode"))):
        if mode is not None and mode not in MODES:
            rep.refuse(f"{where}.network_mode = {mode!r}: Harbor knows {', '.join(MODES)}")
            return None
    verifier_mode = ver_t.get("network_mode") or table(ver_t, "environment").get("network_mode")
    if verifier_mode in ("public", "allowlist"):
        rep.unmapped.append(f"verifier network_mode = {verifier_mode!r}: assay's verifier never has the network, so "
                            "a test script that fetches fails here")
    mode = phase or baseline
    if mode is None:
        if "allow_internet" in env_t:
            rep.mapped.append("environment.allow_internet -> network" + (" (true read as harness)" if env_t["allow_internet"] else ""))
            return bool(env_t["allow_internet"])
        rep.approximated.append("no network_mode: Harbor's default is public (the internet, where an agent may "
                                "apt-get or pip install); here the agent has the run's --network, never the internet")
        return None
    if "allow_internet" in env_t:
        rep.approximated.append("environment.allow_internet is overridden by network_mode, as in Harbor")
    rep.mapped.append(f"{'agent' if phase else 'environment'}.network_mode = {mode!r} -> network"
                      + ("" if mode == "no-network" else " (read as harness: no internet here)"))
    if mode == "allowlist":
        hosts = [str(h) for h in (agent_t.get("allowed_hosts") or env_t.get("allowed_hosts") or [])]
        rep.unmapped.append(f"network_mode = 'allowlist' (allowed_hosts: {', '.join(hosts) or 'none'}): those hosts "
                            "are not reachable here; the agent gets the harness network (no internet)")
    return mode != "no-network"
