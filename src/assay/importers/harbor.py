"""Harbor 2.0 / Terminal-Bench 2.x tasks: ``task.toml``, ``instruction.md``,
``environment/Dockerfile``, ``tests/test.sh`` (+ its files, seen at ``/tests``) writing a reward
to ``/logs/verifier``, and ``solution/solve.sh``. docs/import.md has the field table."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from assay.importers.common import (bash_when_bare, copy_dir, dockerfile_environment, metadata, names_reward,
                                    resource, seconds, solution_fetches, table, task_id, typed_metadata, write_task)
from assay.importers.harbor_keys import name_unread, refuse_unrunnable, size_mb
from assay.importers.harbor_steps import read_steps, write_steps
from assay.importers.harbor_phases import (carried_artifacts, network, prebuilt_from_dockerfile, separate_verifier,
                                           verifier_environment)
from assay.importers.harbor_digest import MANIFEST, DigestError, content_digest, find_manifest, pinned
from assay.importers.harbor_offline import rewrite_offline
from assay.importers.report import TaskReport

#: the importer's choice: a Harbor reward counts as a pass at 1.0 (rewards are 0..1)
THRESHOLD = 1.0
META_KEYS = ("difficulty", "category", "tags", "author_name", "author_email", "expert_time_estimate_min",
             "junior_time_estimate_min", "custom_docker_compose")


def find_tasks(src: Path) -> list[Path]:
    """``src`` itself when it is a task, else every folder under it holding a task.toml."""
    if (src / "task.toml").is_file():
        return [src]
    return sorted(p.parent for p in src.rglob("task.toml") if p.is_file())


def write_task_folder(src: Path, dst: Path, rep: TaskReport) -> str | None:
    """One Harbor task as an assay task in ``dst``; returns its category (None: refused)."""
    try:
        doc = tomllib.loads((src / "task.toml").read_text())
    except tomllib.TOMLDecodeError as e:
        rep.refuse(f"task.toml is not valid TOML: {e}")
        return None
    if refuse_unrunnable(doc, rep):
        return None
    steps = read_steps(src, doc, rep) if "steps" in doc else None
    if "steps" in doc and steps is None:
        return None
    instruction = src / "instruction.md"
    if steps is not None:  # each step's instruction is under steps/NAME/: the first is the prompt
        prompt = steps[0].instruction
    elif not instruction.is_file() or not instruction.read_text().strip():
        rep.refuse("instruction.md is missing or empty: there is no prompt")
        return None
    else:
        prompt = instruction.read_text()
    digest = _check_digest(src, doc, rep)
    if digest is False:
        return None
    env_t, agent_t, ver_t, sol_t = (table(doc, k) for k in ("environment", "agent", "verifier", "solution"))
    meta, info = table(doc, "metadata"), table(doc, "task")
    env_dir = src / "environment"
    for compose in ("docker-compose.yaml", "docker-compose.yml", "compose.yaml"):
        if (env_dir / compose).is_file():
            rep.refuse(f"environment/{compose}: multi-container tasks (compose files) cannot run here")
            return None
    if env_t.get("docker_image") and not prebuilt_from_dockerfile(env_t["docker_image"], env_dir, "environment", rep):
        return None
    if (env_t.get("gpus") or 0) > 0:
        rep.refuse(f"environment.gpus = {env_t['gpus']}: no GPUs here")
        return None
    separate = separate_verifier(ver_t, src, rep)
    if separate is None:
        return None
    if separate and steps is not None:
        rep.refuse("a separate verifier in a multi-step task is not mapped yet")
        return None
    test_sh = src / "tests" / "test.sh"
    if steps is not None:
        pass  # each step's script was checked by read_steps
    elif not test_sh.is_file():
        rep.refuse("tests/test.sh is missing: no reward can be computed")
        return None
    elif not names_reward(src / "tests"):
        rep.refuse("tests/ never names /logs/verifier/reward.txt or reward.json: the script writes no reward")
        return None
    if not (env_dir / "Dockerfile").is_file():
        rep.refuse("environment/Dockerfile is missing")
        return None
    task: dict[str, Any] = {"category": _category(meta)}
    if info.get("description"):
        task["description"] = str(info["description"])
    # a timeout given is checked as given (0 too: never silently the default)
    build_timeout = (seconds(env_t["build_timeout_sec"], "environment.build_timeout_sec")
                     if env_t.get("build_timeout_sec") is not None else None)
    env = dockerfile_environment(dst, env_dir / "Dockerfile", env_dir, rep, build_timeout)
    if env is None:
        return None
    task["environment"] = env
    if build_timeout is not None:
        task["build_timeout_s"] = build_timeout
        rep.mapped.append("environment.build_timeout_sec -> build_timeout_s")
    if env_t.get("workdir"):
        task["workdir"] = str(env_t["workdir"])
        rep.mapped.append("environment.workdir -> workdir")
    if agent_t.get("timeout_sec") is not None:
        task["budget"] = {"wall_time_s": seconds(agent_t["timeout_sec"], "agent.timeout_sec")}
        rep.mapped.append("agent.timeout_sec -> budget.wall_time_s")
    given = ver_t.get("timeout_sec")
    verifier_timeout = seconds(120 if given is None else given, "verifier.timeout_sec")
    task["verifier_timeout_s"] = verifier_timeout + 30
    limits: dict[str, float] = {}
    for key in ("cpus", "memory_mb", "storage_mb"):
        older = key.removesuffix("_mb")  # Harbor's older size string, read where the newer field is absent
        if env_t.get(key) is None and key != older and env_t.get(older) is not None:
            env_t = {**env_t, key: size_mb(env_t[older], f"environment.{older}")}
            rep.mapped.append(f"environment.{older} = {env_t[older]!r} -> limits.{key}")
        if env_t.get(key) is None:
            continue
        amount = resource(env_t[key], f"environment.{key}")
        if amount is None:
            rep.approximated.append(f"environment.{key} = 0 (no limit under Docker): assay's default for it applies")
        else:
            limits[key] = amount
    if limits:
        task["limits"] = limits
        rep.mapped.append(f"environment.{{{', '.join(limits)}}} -> limits")
    allow = network(env_t, agent_t, ver_t, rep)
    if not rep.imported:
        return None
    if allow is not None:
        task["allow_internet"] = allow
    roles = {"agent": {}, "verifier": {}, "solution": {}}
    for role, section in (("agent", env_t), ("verifier", ver_t), ("solution", sol_t)):
        roles[role] = {str(k): str(v) for k, v in table(section, "env").items()}
    shared = roles.pop("agent")
    if shared or any(roles.values()):
        task["env"] = {"agent": shared, "verifier": {**shared, **roles["verifier"]},
                       "solution": {**shared, **roles["solution"]}}
        rep.mapped.append("environment.env / verifier.env / solution.env -> env.agent/verifier/solution")
    name_unread(doc, rep)
    if env_t.get("mcp_servers"):
        rep.unmapped.append("environment.mcp_servers: MCP servers are not started by this importer")
    if steps is not None:
        write_steps(src, dst, steps, task, rep, task.get("budget", {}).get("wall_time_s"), verifier_timeout, THRESHOLD)
        return _finish(src, dst, doc, task, rep, meta, info, digest, prompt, steps=True)
    copy_dir(src / "tests", dst / "hidden" / "tests")
    if separate:
        v_env = verifier_environment(src, dst, ver_t, rep, build_timeout)
        if v_env is None:
            return None
        task["verifier_environment"] = v_env
        carried_artifacts(doc, env_dir / "Dockerfile", env_t, rep)
    else:
        rep.mapped.append("tests/ -> hidden/tests (seen at /tests by the reward_file predicate only)")
    task["predicates"] = [{"id": "reward", "kind": "reward_file", "tests": None if separate else "tests",
                           "script": "test.sh", "threshold": THRESHOLD, "timeout_s": verifier_timeout}]
    rep.mapped.append(f"tests/test.sh + /logs/verifier/reward.* -> reward_file predicate (pass: reward >= {THRESHOLD})")
    tests_image = rewrite_offline(test_sh, dst / "hidden" / "tests" / "test.sh", rep, environment=env_dir,
                                  own_verifier=separate)
    if tests_image is not None:
        task["verifier_environment"] = tests_image
    bash_when_bare(dst / "hidden" / "tests" / "test.sh", "tests/test.sh", rep)
    if (src / "solution" / "solve.sh").is_file():
        copy_dir(src / "solution", dst / "solution")  # the whole folder: a solution may ship its own files
        task["solution_dir"] = "/solution"  # where Harbor puts it, and where a solve.sh may name its files
        rep.mapped.append("solution/ -> solution/ (the oracle runs solve.sh; the folder at /solution and "
                          "/assay/solution)")
        solution_fetches(src / "solution" / "solve.sh", rep)
        bash_when_bare(dst / "solution" / "solve.sh", "solution/solve.sh", rep)
    else:
        task["solution"] = None
        rep.unmapped.append("no solution/solve.sh: the task has no reference solution")
    return _finish(src, dst, doc, task, rep, meta, info, digest, prompt)


def _finish(src: Path, dst: Path, doc: dict[str, Any], task: dict[str, Any], rep: TaskReport, meta: dict[str, Any],
            info: dict[str, Any], digest: str | None, prompt: str, *, steps: bool = False) -> str:
    """What every Harbor task ends with: its metadata, what was not read, task.yaml and prompt.md."""
    kept = metadata(meta, META_KEYS)
    for k in ("name", "authors", "keywords"):
        if info.get(k):
            kept[f"task.{k}"] = info[k]
    if doc.get("version"):
        kept["harbor_version"] = doc["version"]
    task["tags"] = sorted({str(t) for t in [*meta.get("tags", []), *info.get("keywords", [])]})
    task["extra"] = {"source": {"format": "harbor", "path": str(src), "metadata": kept,
                                **({"digest": digest} if digest else {})}}
    typed_metadata(task, meta, rep, authors=info.get("authors"))
    rep.mapped.append("metadata (difficulty, tags, authors, time estimates) -> metadata (typed), tags, and as "
                      "written in extra.source.metadata")
    read = ("environment", "tests", "steps") if steps else ("environment", "tests", "solution")
    for extra_dir in sorted(p.name for p in src.iterdir() if p.is_dir()):
        if extra_dir not in read:
            rep.unmapped.append(f"{extra_dir}/ is not read by this importer")
    write_task(dst, task, prompt, rep)
    rep.mapped.append("steps/FIRST/instruction.md -> prompt.md" if steps else "instruction.md -> prompt.md")
    return task["category"]


def _check_digest(src: Path, doc: dict[str, Any], rep: TaskReport) -> str | None | bool:
    """The task's digest as its dataset.toml pins it, verified (None: not pinned; False: refused)."""
    manifest = find_manifest(src.parent)
    if manifest is None:
        return None
    try:
        pins = pinned(manifest)
    except DigestError as e:
        rep.refuse(str(e))
        return False
    name = table(doc, "task").get("name")
    if name is None:  # as Harbor's publisher names a task without [task].name: by its folder
        name = next((n for n in pins if n.split("/", 1)[-1] == src.name), None)
    if name not in pins:
        return None
    got = content_digest(src)
    if got is None:
        rep.unmapped.append(f"{MANIFEST} pins {pins[name][:19]}... but the task's own ignore rules "
                            "(.gitignore/.harborignore) are not read here: the digest was not checked")
        return None
    if got != pins[name]:
        rep.refuse(f"content digest {got[:19]}... differs from {MANIFEST}'s {pins[name][:19]}... for {name}: "
                   "the task changed since the dataset pinned it")
        return False
    rep.mapped.append(f"{MANIFEST} digest {got[:19]}... verified -> extra.source.digest (and the run's manifest)")
    return got


def _category(meta: dict[str, Any]) -> str:
    c = meta.get("category")
    return task_id(str(c)) if c else "default"
