"""Harbor's stock verifier bootstrap, run offline. Most Harbor tasks' ``tests/test.sh`` install
curl with apt, download uv, and run ``uvx --with pytest==… --with pytest-json-ctrf==… pytest …``;
with no network at test time that script writes reward 0 whatever the agent did. When those are
its only fetches, the importer keeps the script and its reward logic and replaces the bootstrap
with the image's Debian pytest (``python3 -I -m pytest``: isolated, so a module the agent left in
the folder the script runs in is not imported; ``--ctrf`` dropped), flagged approximated."""

from __future__ import annotations

import re
from pathlib import Path

from assay.importers.common import network_lines
from assay.importers.report import TaskReport

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
#: ``uvx [--with PKG]... pytest ARGS`` (one logical line); PKG must be pytest or its ctrf plugin
_UVX = re.compile(r"^(\s*)uvx\s+((?:--with\s+\S+\s+)*)pytest\b(.*)$", re.S)
_WITH_OK = re.compile(r"^(pytest|pytest-json-ctrf)(==[\w.]+)?$")
_CTRF = re.compile(r"\s--ctrf\s+\S+")


def offline_script(text: str) -> str | None:
    """The script with the stock bootstrap replaced, or None when it fetches anything else
    (then it runs as shipped and the report says it needs the network)."""
    lines = text.replace("\\\n", " ").splitlines()
    out: list[str] = []
    changed = False
    for line in lines:
        if _BOOTSTRAP.match(line) or _apt_bootstrap(line):
            changed = True
            continue
        m = _UVX.match(line)
        if m is None:
            out.append(line)
            continue
        if not all(_WITH_OK.match(p) for p in m.group(2).split()[1::2]):
            return None
        # -I: the folder the script runs in (the agent's workspace) is not first on sys.path, as
        # `python3 -m` puts it; an agent's /app/pytest.py would be the test runner (uvx's is not)
        out.append(f"{m.group(1)}python3 -I -m pytest -p no:cacheprovider{_CTRF.sub('', ' ' + m.group(3))}")
        changed = True
    if not changed or re.search(r"\b(curl|wget|uvx?|pip3?|apt-get|apt)\b", "\n".join(
            ln.split("#", 1)[0] for ln in out)):
        return None
    return "\n".join(out) + "\n"


def rewrite_offline(script: Path, written: Path, rep: TaskReport, label: str = "tests/test.sh") -> None:
    """``written`` (the imported copy of ``script``) run offline when the stock bootstrap is its only
    fetch, each way said in the report under ``label``."""
    fetches = network_lines(script)
    offline = offline_script(script.read_text(errors="replace")) if fetches else None
    if offline is not None:
        written.write_text(offline)
        rep.approximated.append(f"{label}'s uv bootstrap (" + "; ".join(fetches[:3]) + ") replaced by the "
                                "image's Debian pytest (python3 -I -m pytest, --ctrf dropped); pytest's version may differ")
    elif fetches:
        rep.unmapped.append(f"{label} fetches from the network at test time; the verifier has no network "
                            "here, so the script runs as shipped and may fail: " + "; ".join(fetches[:4]))
