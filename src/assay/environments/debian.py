"""A Debian base root filesystem from Debian's own packages, with ``mmdebstrap`` (a Debian
package: ``apt-get install mmdebstrap``), from the host's Debian sources and apt options."""

from __future__ import annotations

import re
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


_SUITE = re.compile(r"^(bullseye|bookworm|trixie)(-updates|-security|-backports)?$")


def _suite(word: str, release: str, seen: list[str]) -> str:
    m = _SUITE.match(word)
    if m is None:
        return word
    seen.append(m.group(1))
    return release + (m.group(2) or "")


def sources_for(text: str, release: str) -> str:
    """The host's Debian sources (deb822 or one-line) naming ``release``'s suites instead of its
    own (``bookworm-updates`` -> ``trixie-updates``): mirrors, components and options kept, so a
    trixie base is trixie's packages. ValueError when they name no Debian release to replace."""
    seen: list[str] = []
    out = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        if body.startswith("Suites:"):
            words = body[len("Suites:"):].split()
            body = "Suites: " + " ".join(_suite(w, release, seen) for w in words)
        elif body.startswith(("deb ", "deb-src ")):
            words = body.split()
            at = 1
            if len(words) > 1 and words[1].startswith("["):  # options: up to the word ending in ]
                while at < len(words) and not words[at].endswith("]"):
                    at += 1
                at += 1
            if at + 1 < len(words):
                words[at + 1] = _suite(words[at + 1], release, seen)
            body = " ".join(words)
        out.append(body + line[len(line.rstrip("\n")):])
    if not seen:
        raise ValueError("the host's apt sources name no Debian release (bullseye, bookworm, trixie) to build "
                         f"debian:{release} from; give the host Debian's sources")
    return "".join(out)


def argv(plan: BasePlan, target: Path, sources: Path | None = None) -> list[str]:
    """mmdebstrap's command line for ``plan`` into the (not yet existing) folder ``target``, from
    ``sources`` (default: the host's own, as they are)."""
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
    src = sources or sources_file()
    if src is not None:
        args.append(str(src))
    return args


def write_sources(release: str, folder: Path) -> Path | None:
    """The host's sources for ``release`` written into ``folder`` under the host file's name (the
    name the base keeps), or None when the host has none."""
    src = sources_file()
    if src is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / src.name
    dest.write_text(sources_for(src.read_text(), release))
    return dest
