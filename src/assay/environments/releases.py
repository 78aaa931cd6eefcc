"""Which Debian release a ``FROM`` is built on: the one whose packaged language is the image's.

An official language image (``python:3.13-slim``, ``golang:1.24-bookworm``) promises a version of
its language; the builder maps it to Debian's package of that language, so the release decides the
version. The default release first, then newer ones: the first whose version is at least the
image's. None is: the newest, and the deviation says the version is older. A ``debian:`` image is
built on its own release. The versions are Debian's (``apt-cache policy``, major.minor).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the releases this builder makes, oldest first (``assay.spec.environment.DEBIAN_RELEASES``)
ORDER = ("bullseye", "bookworm", "trixie")
NEWEST = ORDER[-1]
#: Debian's release numbers, and the suites that name the current one
NUMBERS = {"11": "bullseye", "12": "bookworm", "13": "trixie", "stable": NEWEST, "latest": NEWEST}

#: each language's version as Debian packages it, per release
VERSIONS: dict[str, dict[str, tuple[int, ...]]] = {
    "Python": {"bullseye": (3, 9), "bookworm": (3, 11), "trixie": (3, 13)},
    "Go": {"bullseye": (1, 15), "bookworm": (1, 19), "trixie": (1, 24)},
    "Rust": {"bullseye": (1, 48), "bookworm": (1, 63), "trixie": (1, 85)},
    "Node.js": {"bullseye": (12,), "bookworm": (18,), "trixie": (20,)},
    "Java": {"bullseye": (11,), "bookworm": (17,), "trixie": (21,)},
    "Ruby": {"bullseye": (2, 7), "bookworm": (3, 1), "trixie": (3, 3)},
    "PHP": {"bullseye": (7, 4), "bookworm": (8, 2), "trixie": (8, 4)},
}

_TAG_VERSION = re.compile(r"^(\d{1,2})(?:\.(\d{1,3}))?(?![\d])")
_NAME_VERSION = re.compile(r"(\d{1,2})[.-](\d{1,3})$")


@dataclass(frozen=True)
class Choice:
    """A release, and what to say about the language's version there."""

    release: str
    said: str


def _parts(image: str) -> tuple[str, str]:
    """(last part of the name, tag) of ``image``, without registry, path or digest."""
    name = image.split("@")[0].rsplit("/", 1)[-1]
    base, _, tag = name.partition(":")
    return base, tag


def debian_tag(image: str) -> tuple[str | None, bool]:
    """A ``debian:`` image's release (None: not one this builder makes) and whether its tag names
    that release exactly (``bookworm-slim``, ``12``; not ``stable``, which moves)."""
    release = tag_release(image)
    word = _parts(image)[1].split("-")[0]
    return release, word == release or NUMBERS.get(word) == release and word.isdigit()


def tag_release(image: str) -> str | None:
    """A release the tag names as a word (``3.13-slim-bookworm``), or a ``debian:`` image's."""
    base, tag = _parts(image)
    words = re.split(r"[-._]", tag)
    if base == "debian":
        return NUMBERS.get(words[0], words[0] if words[0] in ORDER else None) if tag else NEWEST
    return next((w for w in words if w in ORDER), None)


def tag_version(image: str, language: str) -> tuple[int, ...] | None:
    """The version an image promises: its tag's leading ``3.13`` / ``20``, or its name's ``3-13``
    (a benchmark's ``python-3-13:20250620``); None when it names none (``latest``, ``slim``)."""
    base, tag = _parts(image)
    m = _TAG_VERSION.match(tag)
    if m:
        return tuple(int(g) for g in m.groups() if g is not None)
    m = _NAME_VERSION.search(base)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _v(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def choose(image: str, language: str, default: str) -> Choice:
    """The release for a ``FROM`` of ``language``'s image, and the sentence on its version."""
    have = VERSIONS[language]
    want = tag_version(image, language)
    named = tag_release(image)
    if want is None:
        return Choice(NEWEST, f"Debian {NEWEST}'s {language} is {_v(have[NEWEST])}; the image names no version")
    later = ORDER[ORDER.index(default) + 1:] if default in ORDER else ()
    candidates = [r for r in dict.fromkeys([*([named] if named else []), default, *later]) if r in have]
    release = next((r for r in candidates if have[r] >= want), NEWEST)
    got = have[release]
    if got < want:
        said = f"Debian {release}'s {language} is {_v(got)}, older than the image's {_v(want)}"
    elif got[:len(want)] == want:
        said = f"Debian {release}'s {language} is {_v(got)}, as the image's"
    else:
        said = f"Debian {release}'s {language} is {_v(got)}; the image's is {_v(want)}"
    if named and named != release and named in have:
        said += f"; {named}'s is {_v(have[named])}"
    return Choice(release, said)


def newest(releases: list[str]) -> str:
    """The newest of ``releases`` (what stages handing files to each other are built on)."""
    return max(releases, key=ORDER.index)


#: by release: the transitional packages of the release before that it no longer has, and what
#: each stood for (its Depends), as a Dockerfile written for the older release names them
SUCCESSORS: dict[str, dict[str, str]] = {
    "trixie": {"libgl1-mesa-glx": "libgl1 libglx-mesa0", "libegl1-mesa": "libegl1", "libgles2-mesa": "libgles2"},
}


def successors(named: str | None, release: str) -> dict[str, str]:
    """The packages to install as their successors when an image that names ``named``
    (``python:3.13-slim-bookworm``) is built on the newer ``release``: none when it is not newer."""
    if named not in ORDER or release not in ORDER or ORDER.index(named) >= ORDER.index(release):
        return {}
    out: dict[str, str] = {}
    for r in ORDER[ORDER.index(named) + 1:ORDER.index(release) + 1]:
        out.update(SUCCESSORS.get(r, {}))
    return out


def renamed(argv: tuple[str, ...], table: dict[str, str]) -> tuple[tuple[str, ...], list[str]]:
    """A RUN step's argv with every package of ``table`` named in an apt install replaced by its
    successors (the shell form's text word by word, the exec form's arguments), and the names
    replaced."""
    if not table:
        return argv, []
    found: list[str] = []

    def sub(text: str) -> str:
        if "install" not in text or "apt" not in text:
            return text
        for old, new in table.items():
            text, n = re.subn(rf"(?<![\w.+:-]){re.escape(old)}(?![\w.+:-])", new, text)
            if n and old not in found:
                found.append(old)
        return text

    if argv[:2] == ("/bin/sh", "-c") and len(argv) >= 3:
        return (*argv[:2], sub(argv[2]), *argv[3:]), found
    if argv and argv[0].startswith("apt") and "install" in argv:
        out: list[str] = []
        for a in argv:
            if a in table:
                out += table[a].split()
                if a not in found:
                    found.append(a)
            else:
                out.append(a)
        return tuple(out), found
    return argv, []
