"""A Debian base root filesystem from Debian's own packages, with ``mmdebstrap`` (a Debian
package: ``apt-get install mmdebstrap``), from the host's Debian sources and apt options."""

from __future__ import annotations

import shutil
from pathlib import Path

from assay.environments import reproducible
from assay.environments.plan import APT_CONF, SOURCES, BasePlan


def mmdebstrap() -> str | None:
    """The mmdebstrap on PATH, if any."""
    return shutil.which("mmdebstrap")


def sources_file() -> Path | None:
    """The host's Debian sources, reused as the base's (a deb822 file or a sources.list)."""
    return next((p for p in SOURCES if p.is_file() and p.stat().st_size), None)


def argv(plan: BasePlan, target: Path) -> list[str]:
    """mmdebstrap's command line for ``plan`` into the (not yet existing) folder ``target``."""
    binary = mmdebstrap()
    if binary is None:
        raise FileNotFoundError("mmdebstrap is not installed (apt-get install mmdebstrap)")
    # mmdebstrap honours SOURCE_DATE_EPOCH (dpkg's and its own dates): two builds agree
    args = ["env", f"SOURCE_DATE_EPOCH={reproducible.SOURCE_DATE_EPOCH}", binary, "--variant=apt", "--mode=root",
            f"--include={','.join(plan.packages)}"]
    if APT_CONF.is_dir():  # the host's apt options (a proxy, a snapshot's Valid-Until), minus its hooks
        for conf in sorted(APT_CONF.iterdir()):
            if conf.is_file() and conf.name.startswith("99"):
                args.append(f"--aptopt={conf}")
    # mmdebstrap names a sources file it is given 0000NAME; Debian's images keep it as NAME
    # (debian.sources, which Dockerfiles edit to add components or pin a snapshot)
    args.append('--customize-hook=for f in "$1"/etc/apt/sources.list.d/0000*; do [ -e "$f" ] || continue; '
                'mv "$f" "${f%/*}/${f##*/0000}"; done')
    args += [plan.release, str(target)]
    src = sources_file()
    if src is not None:
        args.append(str(src))
    return args
