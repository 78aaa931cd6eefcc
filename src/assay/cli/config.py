"""The project config file: ``assay.toml`` (or ``[tool.assay]`` in ``pyproject.toml``) in the current
folder or the nearest one above it, one table per command::

    [run]
    jobs = 4
    model = "scripted"
    max-infra-rate = 0.1

Its values are the commands' defaults (a command-line option, then an ``ASSAY_<OPTION>``
variable, win over them); every key is checked when the file is read (exit 2 naming the file and
the key), and a run records the file, its digest and the values it took in its manifest."""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import SpecError, SpecProblem

CONFIG_FILE = "assay.toml"
PYPROJECT = "pyproject.toml"


@dataclass
class ProjectConfig:
    path: Path
    sha256: str
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)

    def record(self, command: str, used: dict[str, Any]) -> dict[str, Any]:
        """What the manifest binds: the file, its digest and the values this command took from it."""
        return {"file": str(self.path), "sha256": self.sha256, "command": command,
                "values": {k: (str(v) if isinstance(v, Path) else v) for k, v in sorted(used.items())}}


#: the config file found for this process (None: none), for the run to record
LOADED: ProjectConfig | None = None


def find_config(start: Path | None = None) -> ProjectConfig | None:
    """The nearest ``assay.toml``, or ``pyproject.toml`` with a ``[tool.assay]`` table."""
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        for name in (CONFIG_FILE, PYPROJECT):
            p = folder / name
            if not p.is_file():
                continue
            data = p.read_bytes()
            try:
                doc = tomllib.loads(data.decode("utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
                if name == PYPROJECT:
                    continue  # not ours to judge unless it names [tool.assay]
                raise SpecError([SpecProblem(str(p), "", f"not valid TOML: {e}", "fix the TOML syntax")]) from None
            tables = doc if name == CONFIG_FILE else (doc.get("tool") or {}).get("assay")
            if tables is None:
                continue
            prefix = "" if name == CONFIG_FILE else "tool.assay."
            for key, value in tables.items():
                if not isinstance(value, dict):
                    raise SpecError([SpecProblem(str(p), f"{prefix}{key}", "must be a table of one command's options",
                                                 f"write [{prefix}run] and its options under it")])
            return ProjectConfig(p, hashlib.sha256(data).hexdigest(), {k: dict(v) for k, v in tables.items()})
    return None


def project_defaults(root: Any, command: str | None, commands: set[str]) -> dict[str, Any] | None:
    """Click's ``default_map`` for the invoked command from the project config file, every key of
    it checked against that command's options and their types."""
    global LOADED
    import typer

    LOADED = cfg = find_config()
    if cfg is None:
        return None
    prefix = "" if cfg.path.name == CONFIG_FILE else "tool.assay."
    unknown = sorted(set(cfg.tables) - commands)
    if unknown:
        raise SpecError([SpecProblem(str(cfg.path), f"{prefix}{unknown[0]}", "not an assay command",
                                     f"use tables named after commands: {', '.join(sorted(commands))}")])
    if command is None or command not in cfg.tables:
        return None
    click_cmd = typer.main.get_command(root).commands[command]  # type: ignore[attr-defined]
    params = {p.name: p for p in click_cmd.params if p.name}
    out: dict[str, Any] = {}
    ctx = type(click_cmd).context_class(click_cmd)
    for key, value in cfg.tables[command].items():
        name = key.replace("-", "_")
        param = params.get(name)
        if param is None or param.param_type_name != "option":
            options = sorted(p.replace("_", "-") for p, v in params.items() if v.param_type_name == "option")
            raise SpecError([SpecProblem(str(cfg.path), f"{prefix}{command}.{key}", f"not an option of `assay {command}`",
                                         f"use one of: {', '.join(options)}")])
        try:
            param.process_value(ctx, value)
        except Exception as e:  # noqa: BLE001 - click's BadParameter and friends
            raise SpecError([SpecProblem(str(cfg.path), f"{prefix}{command}.{key}", f"bad value {value!r}: {e}",
                                         f"see `assay {command} --help`")]) from None
        out[name] = value
    return {command: out}
