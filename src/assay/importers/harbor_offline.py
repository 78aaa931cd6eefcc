"""Harbor's stock verifier bootstrap, run offline. Most Harbor tasks' ``tests/test.sh`` install
curl with apt, download uv, and run ``uvx --with pytest==… --with pytest-json-ctrf==… pytest …``;
with no network at test time that script writes reward 0 whatever the agent did. When those are
its only fetches, the importer keeps the script and its reward logic and replaces the bootstrap
with the image's Debian pytest (``python3 -I -m pytest``: isolated, so a module the agent left in
the folder the script runs in is not imported; ``--ctrf`` dropped), flagged approximated."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from assay.importers.common import network_lines
from assay.importers.report import TaskReport
from assay.spec.environment import DEBIAN_PACKAGE

#: the bootstrap lines dropped: uv's installer, uv's env file, apt's DEBIAN_FRONTEND
_BOOTSTRAP = re.compile(r"^\s*(curl -LsSf https://astral\.sh/uv/[\w.]+/install\.sh \| sh|"
                        r"source \$HOME/\.local/bin/env|export DEBIAN_FRONTEND=\S+)\s*(#.*)?$")
#: ``[DEBIAN_FRONTEND=x] apt-get [-FLAGS] update|install [-FLAGS] PKG...`` (one logical line)
_APT = re.compile(r"^\s*(?:DEBIAN_FRONTEND=\S+\s+)?apt-get\s+((?:-\S+\s+)*)(update|install)\b(.*?)\s*(#.*)?$")
#: what the stock bootstrap installs with apt: curl, to fetch uv, and the CA bundle it needs
_APT_OK = frozenset({"curl", "ca-certificates"})


#: ``uvx`` or ``uv run`` with only pytest's packages, then pytest (a word of its own, anywhere in a
#: line): ``--with PKG``, ``-w PKG`` or ``--with=PKG`` (PKG pytest or its ctrf plugin), and the Python
#: asked for, ``-p 3.13``/``--python 3.13`` (the official Terminal-Bench 2.0 spelling), run here by
#: the image's python3
_UV_PYTEST = re.compile(r"(?<![\w/.-])(uvx|uv\s+run)\s+((?:(?:--with|-w|-p|--python|--index|--extra-index-url|"
                        r"--index-strategy)(?:\s+|=)\S+\s+)*)pytest\b")
_OPTION = re.compile(r"(--with|-w|-p|--python|--index|--extra-index-url|--index-strategy)(?:\s+|=)(\S+)")
#: another package index uv reads beside PyPI (PyTorch's ``--index https://download.pytorch.org/whl/cpu``)
_INDEX = re.compile(r"^https://[A-Za-z0-9.-]+(/[A-Za-z0-9._~/-]*)?$")
_WITH_OK = re.compile(r"^(pytest|pytest-json-ctrf)(==[\w.]+)?$")
_CTRF = re.compile(r"\s--ctrf\s+\S+")


#: a PyPI requirement as uvx's ``-w`` names one (no URL, no variable): name, extras, a version
_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?((==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!-]+)?$")
#: where a test script's own Python packages (uvx ``-w``) are installed at build time, a venv of the
#: image's python3 that only the rewritten script runs
VERIFIER_VENV = "/opt/assay-verifier"


@dataclass(frozen=True)
class OfflinePlan:
    """A test script run offline: its text, and what it installed before its tests, now installed
    when the verifier's image is built (over the task's own, for the verifier alone)."""

    script: str
    venv: tuple[str, ...] = ()  # what uvx names beyond pytest's packages: into VERIFIER_VENV
    indexes: tuple[str, ...] = ()  # the package indexes uvx reads beside PyPI, for that venv
    apt: tuple[str, ...] = ()  # Debian packages beyond the bootstrap's curl
    pip: tuple[str, ...] = ()  # what it pip-installs into the image's Python

    @property
    def verifier_steps(self) -> list[str]:
        """The steps of the verifier's image, as root over the task's image, in the script's order
        of need: apt (with recommends, as the script's apt-get), pip, uvx's venv."""
        out = []
        if self.apt:
            out.append("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
                       + " ".join(self.apt))
        if self.pip:  # the image's pip, as the script's; an image with Debian's marker lets it
            out.append("PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir "
                       + " ".join(shlex.quote(p) for p in self.pip))
        if self.venv:
            # pip reads every index and takes the best version, as uv's --index-strategy unsafe-best-match
            out.append(f"python3 -m venv {VERIFIER_VENV} && {VERIFIER_VENV}/bin/pip install --no-cache-dir "
                       + "".join(f"--extra-index-url {shlex.quote(i)} " for i in self.indexes)
                       + " ".join(shlex.quote(p) for p in self.venv))
        return out


def offline_script(text: str, *, uv_project: bool = False) -> str | None:
    """The script with the stock bootstrap replaced, or None when it fetches anything else
    (then it runs as shipped and the report says it needs the network). ``uvx [--with pytest…]
    pytest`` and ``uv run [--with pytest…] pytest`` (anywhere in a line: ``if uv run … ; then``)
    become the image's pytest; ``uv run`` only outside a uv project (``uv_project``: the task's
    environment ships a pyproject.toml or uv.lock, which ``uv run`` would first sync)."""
    plan = offline_plan(text, uv_project=uv_project)
    return plan.script if plan is not None and not plan.verifier_steps else None


#: ``pip``/``pip3``/``python3 -m pip`` ``install`` of PyPI requirements (its quiet and system flags only)
_PIP = re.compile(r"^\s*(?:pip3?|python3?\s+-m\s+pip)\s+install\s+(.*?)\s*(#.*)?$")
_PIP_FLAGS = frozenset({"-q", "--quiet", "--break-system-packages", "--no-cache-dir", "-U", "--upgrade",
                        "--root-user-action=ignore", "--disable-pip-version-check"})


def _installs(line: str) -> tuple[list[str], list[str]] | None:
    """(apt packages, pip requirements) when ``line`` is only installs this module can move to the
    verifier's image (``apt-get update && apt-get install -y …``, ``pip install …``), else None."""
    apt: list[str] = []
    pip: list[str] = []
    for part in re.split(r"\s*&&\s*|\s*;\s*", line.split(" #", 1)[0].strip()):
        if not part:
            continue
        if (m := _APT.match(part)) is not None:
            words = m.group(3).split()
            if m.group(2) == "install":
                names = [w for w in words if not w.startswith("-")]
                if not names or not all(DEBIAN_PACKAGE.match(w) for w in names):
                    return None
                apt += [w for w in names if w not in _APT_OK]
            elif not all(w.startswith("-") for w in words):
                return None
        elif (m := _PIP.match(part)) is not None:
            words = m.group(1).split()
            names = [w for w in words if not w.startswith("-")]
            if any(w.startswith("-") and w not in _PIP_FLAGS for w in words) or not names or \
                    not all(_REQUIREMENT.match(w) for w in names):
                return None
            pip += names
        else:
            return None
    return apt, pip


def offline_plan(text: str, *, uv_project: bool = False) -> OfflinePlan | None:
    """:func:`offline_script`, and also when the script installs more than the bootstrap before its
    tests: Debian packages (``apt-get install -y curl gcc``), pip requirements into the image's
    Python, or more than pytest's packages for uvx (``-w numpy==2.3.3``, most official Terminal-Bench
    2.0 tasks), each kept for the verifier's image (:attr:`OfflinePlan.verifier_steps`), uvx's run
    from :data:`VERIFIER_VENV`. None when it fetches anything else (a URL, a variable, a file)."""
    lines = text.replace("\\\n", " ").splitlines()
    out: list[str] = []
    packages: list[str] = []
    apt: list[str] = []
    pip: list[str] = []
    indexes: list[str] = []
    changed = False
    for line in lines:
        if _BOOTSTRAP.match(line):
            changed = True
            continue
        # apt's part of the bootstrap (an update, curl and its CA bundle) is an install that adds nothing
        if re.search(r"\b(apt-get|pip3?)\b", line.split("#", 1)[0]) and (got := _installs(line)) is not None:
            apt += [p for p in got[0] if p not in apt]
            pip += [p for p in got[1] if p not in pip]
            changed = True
            continue
        found = list(_UV_PYTEST.finditer(line))
        if not found:
            out.append(line)
            continue
        for m in found:
            options = _OPTION.findall(m.group(2))
            named = [value for flag, value in options if flag in ("--with", "-w")]
            read = [value for flag, value in options if flag in ("--index", "--extra-index-url")]
            if not all(_REQUIREMENT.match(value) for value in named) or not all(_INDEX.match(i) for i in read):
                return None
            indexes += [i for i in read if i not in indexes]
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
    if indexes and not extra:
        return None  # another index for pytest's own packages: not the image's pytest
    return OfflinePlan("\n".join(out) + "\n", venv=tuple(packages) if extra else (), apt=tuple(apt), pip=tuple(pip),
                       indexes=tuple(indexes))


def rewrite_offline(script: Path, written: Path, rep: TaskReport, label: str = "tests/test.sh",
                    environment: Path | None = None, own_verifier: bool = False) -> dict[str, object] | None:
    """``written`` (the imported copy of ``script``) run offline when the stock bootstrap is its only
    fetch, or when what else it fetches is installs, each way said in the report under ``label``;
    ``environment``: the image's build context (a uv project there keeps ``uv run`` as shipped).
    Returns the ``verifier_environment`` to declare when the script installed anything for its tests
    (an image over the task's own, built with those installs); ``own_verifier``: the task has a
    verifier image already, so such a script runs as shipped."""
    fetches = network_lines(script)
    project = environment is not None and any(  # anywhere in it: `uv run` looks up from the folder it runs in
        p.name in ("pyproject.toml", "uv.lock") for p in environment.rglob("*") if p.is_file())
    plan = offline_plan(script.read_text(errors="replace"), uv_project=project) if fetches else None
    steps = plan.verifier_steps if plan is not None else []
    if plan is None or (steps and own_verifier):
        if fetches:
            rep.unmapped.append(f"{label} fetches from the network at test time; the verifier has no network "
                                "here, so the script runs as shipped and may fail: " + "; ".join(fetches[:4]))
        return None
    written.write_text(plan.script)
    said = f"{label}'s {'installs for its tests' if steps else 'uv bootstrap'} (" + "; ".join(fetches[:3]) \
        + ") replaced by "
    if plan.venv:
        pytest = (f"the pytest of {VERIFIER_VENV}, a venv of the image's python3 holding what uvx named ("
                  + ", ".join(plan.venv) + "".join(f", from {i} beside PyPI" for i in plan.indexes)
                  + f"; {VERIFIER_VENV}/bin/python -I -m pytest, --ctrf dropped; uvx's "
                  "`-p` Python is the image's python3)")
    elif plan.pip:
        pytest = "the script's own pytest"
    else:
        pytest = "the image's Debian pytest (python3 -I -m pytest, --ctrf dropped; pytest's version may differ)"
    if not steps:
        rep.approximated.append(said + pytest)
        return None
    held = [f"Debian's {', '.join(plan.apt)}"] * bool(plan.apt) + [f"pip's {', '.join(plan.pip)}"] * bool(plan.pip) \
        + ["that venv"] * bool(plan.venv)
    rep.approximated.append(said + pytest + "; the verifier's image is the task's own with " + " and ".join(held)
                            + " installed when it is built (the network is open then), for the verifier alone: "
                            "the agent's image is the task's as shipped")
    return {"extends": "environment", "steps": steps}
