"""Installing the product agents into a cache outside any trial, and finding them again.

Each agent is pinned to one version and installed into its own self-contained directory
``<root>/<name>/<version>`` (root: ``$ASSAY_AGENTS_DIR`` or ``~/.cache/assay/agents``), so a
trial can mount exactly that directory read-only and nothing else of the host. npm agents get
their own Node from the npm registry's ``node`` package (the system Node may be too old:
OpenClaw needs 24.16+, Pi 1.x needs 22.19+); pip agents get their own venv. Only the package
registries are contacted. A finished install writes ``install.json``; without it the
directory is treated as not installed (an interrupted install is never half-used).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from assay.errors import AgentUnavailable

MARKER = "install.json"


@dataclass(frozen=True)
class NpmTool:
    """A command from an npm package, installed under ``<install dir>/<label>`` with its
    lifecycle scripts off, and linked as ``<label>/bin/<command>`` to the package's prebuilt
    ``binary`` (a path inside the package): the directory a product's PATH gets."""

    label: str
    package: str
    version: str
    command: str
    binary: str

    @property
    def link(self) -> str:
        return f"{self.label}/bin/{self.command}"


@dataclass(frozen=True)
class InstallSpec:
    """How one agent is installed: registry package, pinned version, what to run."""

    name: str
    kind: Literal["npm", "pip"]
    package: str
    version: str
    bin: str  # relative to the install dir
    node: str | None = None  # npm: the ``node`` package range giving the runtime
    extra_bins: tuple[str, ...] = ()  # further executables that must exist
    extras: tuple[str, ...] = ()  # pip extras installed with the package (``hermes-agent[mcp]``)
    #: optional parts: a label -> a glob under the install dir that exists when the part is there
    #: (an older install without them is completed by ``install`` rather than reinstalled)
    parts: tuple[tuple[str, str], ...] = ()
    #: further tools from the npm registry, each an optional part of its own (Hermes' browser_*
    #: tools drive the ``agent-browser`` CLI, which its PyPI package does not bring)
    npm_tools: tuple["NpmTool", ...] = ()

    @property
    def all_parts(self) -> tuple[tuple[str, str], ...]:
        """Every optional part as (label, glob), the npm tools' included."""
        return self.parts + tuple((t.label, t.link) for t in self.npm_tools)

    @property
    def requirement(self) -> str:
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.package}{extras}=={self.version}"


def specs() -> dict[str, InstallSpec]:
    """Every installable product: the ``install_spec`` its adapter class in ``PRODUCTS`` carries."""
    from assay.agents.products import PRODUCTS

    out = {}
    for name, cls in PRODUCTS.items():
        spec = getattr(cls, "install_spec", None)
        if isinstance(spec, InstallSpec):
            out[name] = spec
    return out


@dataclass(frozen=True)
class Installation:
    """A finished install of one agent."""

    name: str
    version: str
    root: Path
    bin: Path
    runtime: str  # "node v24.21.0" or "python 3.11.7"
    seconds: float | None = None
    parts: frozenset[str] = frozenset()  # the spec's optional parts present in this install

    def has(self, part: str) -> bool:
        return part in self.parts

    @property
    def node_bin_dir(self) -> Path:
        return self.root / "node_modules" / ".bin"

    def read_only_paths(self) -> list[Path]:
        """Host paths the agent needs inside the sandbox: its dir, plus a venv's base Python."""
        paths = [self.root]
        cfg = self.root / "venv" / "pyvenv.cfg"
        if cfg.is_file():
            for line in cfg.read_text().splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "home":
                    base = Path(value.strip()).parent  # .../bin -> the Python prefix
                    if base != Path("/usr") and base.is_dir():
                        paths.append(base)
        return paths


def agents_root() -> Path:
    env = os.environ.get("ASSAY_AGENTS_DIR")
    return Path(env) if env else Path.home() / ".cache" / "assay" / "agents"


def spec_for(name: str, version: str | None = None) -> InstallSpec:
    known = specs()
    if name not in known:
        raise AgentUnavailable(f"no installer for agent {name!r}; known: {', '.join(sorted(known))}")
    spec = known[name]
    if version and version != spec.version:
        spec = InstallSpec(spec.name, spec.kind, spec.package, version, spec.bin, spec.node, spec.extra_bins,
                           spec.extras, spec.parts, spec.npm_tools)
    return spec


def install_dir(spec: InstallSpec, root: Path | None = None) -> Path:
    return (root or agents_root()) / spec.name / spec.version


def find(name: str, version: str | None = None, root: Path | None = None) -> Installation | None:
    """The finished install of ``name`` (pinned version unless given), or None."""
    spec = spec_for(name, version)
    d = install_dir(spec, root)
    marker = d / MARKER
    if not marker.is_file():
        return None
    try:
        data = json.loads(marker.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    exe = d / spec.bin
    if not exe.exists() or any(not (d / b).exists() for b in spec.extra_bins):
        return None
    parts = frozenset(label for label, pattern in spec.all_parts if next(d.glob(pattern), None) is not None)
    return Installation(name, data.get("version", spec.version), d, exe, data.get("runtime", ""), data.get("seconds"),
                        parts)


def _run(argv: list[str], *, env: dict[str, str], cwd: Path, log: Path) -> None:
    with open(log, "ab") as f:
        f.write(("$ " + " ".join(argv) + "\n").encode())
        f.flush()
        proc = subprocess.run(argv, env=env, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-1500:]
        raise AgentUnavailable(f"install step failed ({proc.returncode}): {' '.join(argv)}\n{tail}")


def _npm_install(spec: InstallSpec, d: Path, log: Path) -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise AgentUnavailable("npm is not installed (fix: apt-get install npm, or install Node.js)")
    env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false",
           "npm_config_audit": "false", "DISABLE_OPENCOLLECTIVE": "1", "ADBLOCK": "1"}
    (d / "package.json").write_text('{"private": true}\n')
    base = [npm, "install", "--prefix", str(d), "--save-exact", "--no-audit", "--no-fund"]
    if spec.node:
        # the runtime first, then the agent with that runtime on PATH: npm resolves engines
        # against the Node running it, and some agents check it in their preinstall scripts
        _run([*base, f"node@{spec.node}"], env=env, cwd=d, log=log)
        env["PATH"] = f"{d / 'node_modules' / '.bin'}{os.pathsep}{env.get('PATH', '')}"
    _run([*base, f"{spec.package}@{spec.version}"], env=env, cwd=d, log=log)
    node = d / "node_modules" / ".bin" / "node"
    node_exe = str(node) if node.exists() else (shutil.which("node") or "node")
    out = subprocess.run([node_exe, "--version"], capture_output=True, text=True, timeout=60)
    return f"node {out.stdout.strip()}"


def _npm_labels(spec: InstallSpec) -> set[str]:
    return {t.label for t in spec.npm_tools}


def _npm_tools(spec: InstallSpec, d: Path, log: Path, only: set[str] | None = None) -> None:
    """Install each npm tool of ``spec`` (or those in ``only``) beside the agent, and link its command."""
    for tool in spec.npm_tools:
        if only is not None and tool.label not in only:
            continue
        npm = shutil.which("npm")
        if npm is None:
            raise AgentUnavailable(f"npm is not installed, needed for {tool.package} (fix: apt-get install npm)")
        where = d / tool.label
        where.mkdir(parents=True, exist_ok=True)
        (where / "package.json").write_text('{"private": true}\n')
        env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false",
               "npm_config_audit": "false"}
        _run([npm, "install", "--prefix", str(where), "--save-exact", "--no-audit", "--no-fund", "--ignore-scripts",
              f"{tool.package}@{tool.version}"], env=env, cwd=where, log=log)
        binary = where / "node_modules" / tool.package / tool.binary
        if not binary.is_file():
            raise AgentUnavailable(f"{tool.package}@{tool.version}: no {tool.binary} in the package (see {log})")
        binary.chmod(0o755)
        link = d / tool.link
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(os.path.relpath(binary, link.parent))


def _pip_install(spec: InstallSpec, d: Path, log: Path, python: str) -> str:
    _run([python, "-m", "venv", str(d / "venv")], env=dict(os.environ), cwd=d, log=log)
    pip = d / "venv" / "bin" / "pip"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    _run([str(pip), "install", "--no-input", spec.requirement], env=env, cwd=d, log=log)
    out = subprocess.run([str(d / "venv" / "bin" / "python"), "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout.strip().lower()


def _base_python() -> str:
    """A real (non-venv) Python 3.11+ to build agent venvs from; symlinks inside the venv point at it."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return str(base) if base.exists() else sys.executable


def install(name: str, *, version: str | None = None, root: Path | None = None, force: bool = False,
            python: str | None = None) -> Installation:
    """Install ``name`` into the cache (idempotent: an existing finished install is returned)."""
    spec = spec_for(name, version)
    if not force:
        found = find(name, version, root)
        missing = {label for label, _ in spec.all_parts} - found.parts if found is not None else set()
        if found is not None and (not missing or (spec.kind != "pip" and not missing & _npm_labels(spec))):
            return found
        if found is not None:  # an older install of the same version: add the missing parts in place
            log = found.root.parent / f"{spec.version}.install.log"
            if spec.kind == "pip" and missing - _npm_labels(spec):
                pip = found.root / "venv" / "bin" / "pip"
                _run([str(pip), "install", "--no-input", spec.requirement], cwd=found.root, log=log,
                     env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
            _npm_tools(spec, found.root, log, only=missing)
            again = find(name, version, root)
            assert again is not None
            return again
    d = install_dir(spec, root)
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    log = d.parent / f"{spec.version}.install.log"
    log.write_text("")
    t0 = time.monotonic()
    if spec.kind == "npm":
        runtime = _npm_install(spec, d, log)
    else:
        runtime = _pip_install(spec, d, log, python or _base_python())
    _npm_tools(spec, d, log)
    seconds = round(time.monotonic() - t0, 1)
    exe = d / spec.bin
    if not exe.exists():
        raise AgentUnavailable(f"{name}: install finished but {spec.bin} is missing (see {log})")
    version_found = installed_version(spec, d) or spec.version
    (d / MARKER).write_text(json.dumps({"name": name, "package": spec.package, "version": version_found,
                                        "runtime": runtime, "seconds": seconds, "installed_at": time.time()},
                                       indent=2) + "\n")
    found = find(name, version, root)
    assert found is not None
    return found


def installed_version(spec: InstallSpec, d: Path) -> str | None:
    """The version really on disk (package.json or the dist-info), not the one asked for."""
    if spec.kind == "npm":
        pj = d / "node_modules" / spec.package / "package.json"
        try:
            return str(json.loads(pj.read_text())["version"])
        except (OSError, KeyError, json.JSONDecodeError):
            return None
    norm = re.sub(r"[-_.]+", "_", spec.package).lower()
    for info in (d / "venv").glob("lib/python*/site-packages/*.dist-info"):
        dist, _, ver = info.name[: -len(".dist-info")].rpartition("-")
        if re.sub(r"[-_.]+", "_", dist).lower() == norm:
            return ver
    return None
