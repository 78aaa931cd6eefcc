"""Harbor's stock verifier bootstrap, run offline. Most Harbor tasks' ``tests/test.sh`` install
curl with apt, download uv, and run ``uvx --with pytest==… --with pytest-json-ctrf==… pytest …``;
with no network at test time that script writes reward 0 whatever the agent did. When those are
its only fetches, the importer keeps the script and its reward logic and replaces the bootstrap
with the image's Debian pytest (``python3 -I -m pytest``: isolated, so a module the agent left in
the folder the script runs in is not imported; ``--ctrf`` dropped), flagged approximated."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from assay.importers.common import network_lines
from assay.importers.report import TaskReport
from assay.spec.environment_dockerfile import DockerfileError, parse

#: the bootstrap lines dropped: uv's installer, uv's env file, apt's DEBIAN_FRONTEND
_BOOTSTRAP = re.compile(r"^\s*(curl -LsSf https://astral\.sh/uv/[\w.]+/install\.sh \| sh|"
                        r"source \$HOME/\.local/bin/env|export DEBIAN_FRONTEND=\S+)\s*(#.*)?$")
#: ``[DEBIAN_FRONTEND=x] apt-get [-FLAGS] update|install [-FLAGS] PKG...`` (one logical line)
_APT = re.compile(r"^\s*(?:DEBIAN_FRONTEND=\S+\s+)?apt-get\s+((?:-\S+\s+)*)(update|install)\b(.*?)\s*(#.*)?$")
#: what the stock bootstrap installs with apt: curl, to fetch uv, and the CA bundle it needs
_APT_OK = frozenset({"curl", "ca-certificates"})


def _apt_bootstrap(line: str) -> bool:
    """Whether ``line`` is apt's part of the bootstrap: an update, or an install of curl and its
    CA bundle only (flags anywhere)."""
    m = _APT.match(line)
    if m is None:
        return False
    words = m.group(3).split()
    if m.group(2) == "update":
        return all(w.startswith("-") for w in words)
    packages = [w for w in words if not w.startswith("-")]
    return bool(packages) and set(packages) <= _APT_OK
#: ``uvx`` or ``uv run`` with only pytest's packages, then pytest (a word of its own, anywhere in a
#: line): ``--with PKG``, ``-w PKG`` or ``--with=PKG`` (PKG pytest or its ctrf plugin), and the Python
#: asked for, ``-p 3.13``/``--python 3.13`` (the official Terminal-Bench 2.0 spelling), run here by
#: the image's python3
_UV_PYTEST = re.compile(r"(?<![\w/.-])(uvx|uv\s+run)\s+((?:(?:--with|-w|-p|--python)(?:\s+|=)\S+\s+)*)pytest\b")
_OPTION = re.compile(r"(--with|-w|-p|--python)(?:\s+|=)(\S+)")
_WITH_OK = re.compile(r"^(pytest|pytest-json-ctrf)(==[\w.]+)?$")
_CTRF = re.compile(r"\s--ctrf\s+\S+")


#: a PyPI requirement as uvx's ``-w`` names one (no URL, no variable): name, extras, a version
_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?((==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!-]+)?$")
#: where a test script's own Python packages (uvx ``-w``) are installed at build time, a venv of the
#: image's python3 that only the rewritten script runs
VERIFIER_VENV = "/opt/assay-verifier"


def offline_script(text: str, *, uv_project: bool = False) -> str | None:
    """The script with the stock bootstrap replaced, or None when it fetches anything else
    (then it runs as shipped and the report says it needs the network). ``uvx [--with pytest…]
    pytest`` and ``uv run [--with pytest…] pytest`` (anywhere in a line: ``if uv run … ; then``)
    become the image's pytest; ``uv run`` only outside a uv project (``uv_project``: the task's
    environment ships a pyproject.toml or uv.lock, which ``uv run`` would first sync)."""
    plan = offline_plan(text, uv_project=uv_project)
    return plan[0] if plan is not None and not plan[1] else None


def offline_plan(text: str, *, uv_project: bool = False) -> tuple[str, tuple[str, ...]] | None:
    """:func:`offline_script`, and also when uvx names more packages than pytest's (``-w numpy==2.3.3``,
    most official Terminal-Bench 2.0 tasks): then the script's pytest runs from
    :data:`VERIFIER_VENV`, and the second item is every package it names (pytest's pins included),
    to install there at build time. None when it fetches anything else (a URL, a variable)."""
    lines = text.replace("\\\n", " ").splitlines()
    out: list[str] = []
    packages: list[str] = []
    changed = False
    for line in lines:
        if _BOOTSTRAP.match(line) or _apt_bootstrap(line):
            changed = True
            continue
        found = list(_UV_PYTEST.finditer(line))
        if not found:
            out.append(line)
            continue
        for m in found:
            named = [value for flag, value in _OPTION.findall(m.group(2)) if flag in ("--with", "-w")]
            if not all(_REQUIREMENT.match(value) for value in named):
                return None
            if m.group(1) != "uvx" and uv_project:
                return None
            packages += [p for p in named if p not in packages]
        out.append(line)
        changed = True
    extra = any(not _WITH_OK.match(p) for p in packages)
    python = f"{VERIFIER_VENV}/bin/python" if extra else "python3"
    # -I: the folder the script runs in (the agent's workspace) is not first on sys.path, as
    # `python3 -m` puts it; an agent's /app/pytest.py would be the test runner (uvx's is not)
    out = [_CTRF.sub("", _UV_PYTEST.sub(f"{python} -I -m pytest -p no:cacheprovider", line))
           if _UV_PYTEST.search(line) else line for line in out]
    if not changed or re.search(r"\b(curl|wget|uvx?|pip3?|apt-get|apt)\b", "\n".join(
            ln.split("#", 1)[0] for ln in out)):
        return None
    return "\n".join(out) + "\n", tuple(packages) if extra else ()


def rewrite_offline(script: Path, written: Path, rep: TaskReport, label: str = "tests/test.sh",
                    environment: Path | None = None, dockerfile: Path | None = None) -> None:
    """``written`` (the imported copy of ``script``) run offline when the stock bootstrap is its only
    fetch, each way said in the report under ``label``; ``environment``: the image's build context
    (a uv project there keeps ``uv run`` as shipped); ``dockerfile``: the imported image's, where the
    packages uvx would fetch for the tests are installed at build time instead."""
    fetches = network_lines(script)
    project = environment is not None and any(  # anywhere in it: `uv run` looks up from the folder it runs in
        p.name in ("pyproject.toml", "uv.lock") for p in environment.rglob("*") if p.is_file())
    plan = offline_plan(script.read_text(errors="replace"), uv_project=project) if fetches else None
    if plan is not None and plan[1] and (dockerfile is None or not _install_for_tests(dockerfile, plan[1])):
        plan = None
    if plan is not None:
        written.write_text(plan[0])
        bootstrap = f"{label}'s uv bootstrap (" + "; ".join(fetches[:3]) + ") replaced by the "
        if plan[1]:
            rep.approximated.append(bootstrap + f"pytest of {VERIFIER_VENV}, a venv of the image's python3 holding "
                                    "what uvx named (" + ", ".join(plan[1]) + "), installed when the image is "
                                    f"built, for the tests alone ({VERIFIER_VENV}/bin/python -I -m pytest, --ctrf "
                                    "dropped); uvx's `-p` Python is the image's python3")
        else:
            rep.approximated.append(bootstrap + "image's Debian pytest (python3 -I -m pytest, --ctrf dropped); "
                                    "pytest's version may differ")
    elif fetches:
        rep.unmapped.append(f"{label} fetches from the network at test time; the verifier has no network "
                            "here, so the script runs as shipped and may fail: " + "; ".join(fetches[:4]))


def _install_for_tests(dockerfile: Path, packages: tuple[str, ...]) -> bool:
    """Append to ``dockerfile`` the step that installs ``packages`` into :data:`VERIFIER_VENV` (as
    root, the image's last USER kept after it). False when the Dockerfile cannot be read."""
    try:
        text = dockerfile.read_text()
        user = parse(dockerfile).steps
    except (OSError, UnicodeDecodeError, DockerfileError):
        return False
    last_user = next((s.dest for s in reversed(user) if s.kind == "user"), None)
    install = (f"RUN python3 -m venv {VERIFIER_VENV} && {VERIFIER_VENV}/bin/pip install --no-cache-dir "
               + " ".join(shlex.quote(p) for p in packages))
    lines = [install] if last_user in (None, "root", "0") else ["USER root", install, f"USER {last_user}"]
    dockerfile.write_text(text.rstrip("\n") + "\n# added by assay's importer: what tests/test.sh's uvx fetches\n"
                          + "\n".join(lines) + "\n")
    return True
