"""Every key of a Harbor ``task.toml`` the importer reads, by table, so one it does not read is
named in the report (and the task's deviations) instead of dropped without a word: Harbor's format
grows (a healthcheck, skills, users, new hardware), and a task that relies on a key assay never
read must not look imported whole. What cannot run here at all is refused."""

from __future__ import annotations

import re
from typing import Any

from assay.importers.report import TaskReport

#: the keys read, per table ("" is the top level); [metadata] is free-form and kept as written
READ: dict[str, frozenset[str]] = {
    "": frozenset({"version", "schema_version", "artifacts", "metadata", "task", "environment", "agent", "verifier",
                   "solution", "steps", "source", "multi_step_reward_strategy"}),
    "task": frozenset({"name", "description", "authors", "keywords", "version"}),
    "environment": frozenset({"docker_image", "gpus", "build_timeout_sec", "workdir", "cpus", "memory_mb",
                              "storage_mb", "allow_internet", "network_mode", "allowed_hosts", "env", "mcp_servers",
                              "gpu_types", "os", "tpu", "tpus", "memory", "storage"}),
    "agent": frozenset({"timeout_sec", "network_mode", "allowed_hosts"}),
    "verifier": frozenset({"timeout_sec", "env", "environment_mode", "environment", "network_mode", "allowed_hosts"}),
    "verifier.environment": frozenset({"cpus", "memory_mb", "storage_mb", "build_timeout_sec", "network_mode",
                                       "allowed_hosts", "allow_internet", "docker_image", "gpus", "env"}),
    "solution": frozenset({"env"}),
}


def refuse_unrunnable(doc: dict[str, Any], rep: TaskReport) -> bool:
    """Refuse what cannot run here at all (a Windows task, TPUs); True when refused."""
    env = doc.get("environment") if isinstance(doc.get("environment"), dict) else {}
    os_name = env.get("os")
    if os_name is not None and str(os_name).lower() != "linux":
        rep.refuse(f"environment.os = {os_name!r}: assay's sandboxes run Linux only (a Windows task's test.bat "
                   "cannot run here)")
        return True
    tpu = env.get("tpu") or env.get("tpus")
    if tpu:
        rep.refuse(f"environment.tpu = {tpu!r}: no TPUs here")
        return True
    return False


def name_unread(doc: dict[str, Any], rep: TaskReport) -> None:
    """The keys the importer does not read, by dotted path, in the report's could-not-map: one
    line per table, and a line of its own for a key whose meaning is known. A key with an empty
    value (``collect = []``) configures nothing and is not named."""
    for table, keys in READ.items():
        node: Any = doc
        for part in table.split(".") if table else []:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            continue
        unread = [f"{table}.{k}" if table else k for k, v in node.items()
                  if k not in keys and v not in (None, "", [], {})]
        plain = [u for u in unread if u.rsplit(".", 1)[-1] not in _WHY]
        if plain:
            rep.unmapped.append("not read by this importer: " + ", ".join(sorted(plain)))
        for key in sorted(set(unread) - set(plain)):
            rep.unmapped.append(f"{key} is not read by this importer{_WHY[key.rsplit('.', 1)[-1]]}")


_WHY = {
    "healthcheck": " (Harbor waits for it before the agent starts; here nothing waits, and nothing in the "
                   "image is started for the agent)",
    "user": " (the agent and the verifier run as the sandbox's own user here, not as a named one)",
    "skills_dir": " (no skills are installed for the agent here)",
}


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_MB = {"": 1 / (1 << 20), "k": 1 / 1024, "m": 1, "g": 1024, "t": 1 << 20}


def size_mb(value: Any, field: str) -> float:
    """Harbor's older size strings (``memory = "2G"``, ``storage = "10G"``, before ``memory_mb``) in
    MiB; a ValueError naming the field for anything else, so that task is left out with its reason."""
    m = _SIZE.match(value) if isinstance(value, str) else None
    if m is None:
        raise ValueError(f"{field} = {value!r} is not a size (e.g. \"2G\" or \"512M\"; or give {field}_mb)")
    return float(m.group(1)) * _MB[m.group(2).lower()]
