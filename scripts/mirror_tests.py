#!/usr/bin/env python3
"""Move test files so that tests/ mirrors src/assay/: tests of ``src/assay/<room>/<sub>/`` live in
``tests/<room>/<sub>/``.

Re-runnable and idempotent: a second run finds nothing to move. Files it has never seen are judged
the same way: a test belongs to the source folder it imports most (distinct modules, counted per
folder). A test is left where it is when that is not clear:

- the most-imported folder ties with another, or does not beat the folder it is in now;
- within a room that exists in the source (``tests/sandbox/``), a test only moves *down*, into a
  sub-folder of that room (``tests/sandbox/bwrap/``); a test folder with no source counterpart
  (``tests/recovery/``) may move below its nearest existing ancestor, or, from the top, to a room
  holding most (and at least two) of its imports;
- the move would lose a ``conftest.py`` the test sees now, or bring in one that has autouse
  fixtures or pytest hooks;
- the file uses ``__file__`` in a way other than ``Path(__file__)[.resolve()].parent…``/``.parents[N]``;
- a file of that name is already at the destination.

Test folders named after a source folder that was renamed (:data:`FOLDER_MOVES`: ``tests/run/ray``
for ``src/assay/run/cluster``) move whole first, helpers and conftest included.

A move is ``git mv`` (so ``git log --follow`` works), then the moved file's relative imports become
absolute, its ``Path(__file__)`` lookups are re-levelled, missing ``__init__.py`` files are added
(the test tree is a package), and every tracked text file naming the old path
(``tests/a/test_x.py``) or module (``tests.a.test_x``) is updated.

    python scripts/mirror_tests.py            # move, printing each move and why others stayed
    python scripts/mirror_tests.py --dry-run  # only print the plan
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "assay"
TESTS = ROOT / "tests"
#: modules every room imports for its types: no vote for any folder
NO_VOTE = {"assay", "assay.errors", "assay._optional"}
#: test folders kept apart on purpose (end-to-end runs of the shipped examples)
KEEP = {"examples"}
#: whole test folders named after a source folder that was renamed (moved file by file, helpers too)
FOLDER_MOVES = {"tests/run/ray": "tests/run/cluster"}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".sh", ".yml", ".yaml", ".txt", ".cfg", ".ini", ".json", ""}


@dataclass(frozen=True)
class Decision:
    path: Path  # relative to ROOT
    dest: Path | None  # None: stays
    reason: str


def source_modules() -> dict[str, str]:
    """Dotted module name -> its folder relative to src/assay ('' for the top)."""
    out = {}
    for p in SRC.rglob("*.py"):
        rel = p.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
            folder = "/".join(parts[1:])
        else:
            folder = "/".join(parts[1:-1])
        out[".".join(parts)] = folder
    return out


def source_folders(mods: dict[str, str]) -> set[str]:
    return set(mods.values()) | {""}


def _module_of(name: str, mods: dict[str, str]) -> str | None:
    while name:
        if name in mods:
            return name
        name = name.rpartition(".")[0]
    return None


def votes(tree: ast.AST, mods: dict[str, str]) -> Counter[str]:
    """Source folders by how many distinct assay modules the test imports from each."""
    seen: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
        for n in names:
            if n.split(".")[0] != "assay":
                continue
            m = _module_of(n, mods)
            if m is not None and m not in NO_VOTE:
                seen.add(m)
    return Counter(mods[m] for m in seen)


def folder_of(rel: Path) -> str:
    """The test's folder relative to tests/ ('' for the top)."""
    return "/".join(rel.parent.parts[1:])


def _within(folder: str, top: str) -> bool:
    return top == "" or folder == top or folder.startswith(top + "/")


def conftests(folder: str) -> list[Path]:
    """The conftest.py files a test in tests/<folder> sees (outermost first)."""
    out, here = [], TESTS
    for part in [""] + (folder.split("/") if folder else []):
        here = here / part if part else here
        if (here / "conftest.py").is_file():
            out.append(here / "conftest.py")
    return out


def _risky_conftest(path: Path) -> bool:
    text = path.read_text()
    return "autouse" in text or re.search(r"^def pytest_", text, re.M) is not None


# ---------------------------------------------------------------------------- __file__ lookups
@dataclass(frozen=True)
class FileRef:
    """One ``Path(__file__)...parent(s)`` chain: its source span and the level it names
    (0: the file's folder, 1: the folder above, ...)."""

    start: tuple[int, int]
    end: tuple[int, int]
    prefix: str  # "Path(__file__)" or "Path(__file__).resolve()" as written
    level: int


def _parents_chain(node: ast.AST, parents: dict[ast.AST, ast.AST], src: str) -> FileRef | None:
    """``node`` is the ``Name('__file__')``; the chain around it, or None when it is not one."""
    call = parents.get(node)
    if not (isinstance(call, ast.Call) and call.args == [node] and not call.keywords):
        return None
    fn = call.func
    if not ((isinstance(fn, ast.Name) and fn.id == "Path") or (isinstance(fn, ast.Attribute) and fn.attr == "Path")):
        return None
    top: ast.AST = call
    up = parents.get(top)
    if (isinstance(up, ast.Attribute) and up.attr == "resolve" and isinstance(parents.get(up), ast.Call)
            and not parents[up].args):  # type: ignore[attr-defined]
        top = parents[up]
    prefix = ast.get_source_segment(src, top)
    level = -1
    cur = top
    while True:
        up = parents.get(cur)
        if isinstance(up, ast.Attribute) and up.attr == "parent":
            level += 1
            cur = up
            continue
        if (level == -1 and isinstance(up, ast.Attribute) and up.attr == "parents"
                and isinstance(parents.get(up), ast.Subscript)):
            sub = parents[up]
            idx = sub.slice  # type: ignore[attr-defined]
            if isinstance(idx, ast.Constant) and isinstance(idx.value, int):
                level = idx.value
                cur = sub
        break
    if level < 0 or prefix is None:
        return None
    return FileRef((call.lineno, call.col_offset), (cur.end_lineno or 0, cur.end_col_offset or 0), prefix, level)


def file_refs(tree: ast.AST, src: str) -> list[FileRef] | None:
    """Every ``__file__`` lookup of the file, or None when one is not a rewritable chain."""
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    refs = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "__file__":
            ref = _parents_chain(node, parents, src)
            if ref is None:
                return None
            refs.append(ref)
    return refs


def _offset(lines: list[str], pos: tuple[int, int]) -> int:
    line, col = pos
    return sum(len(x) for x in lines[: line - 1]) + len(lines[line - 1].encode()[:col].decode())


def relevel(src: str, refs: list[FileRef], delta: int) -> str:
    lines = src.splitlines(keepends=True)
    for ref in sorted(refs, key=lambda r: r.start, reverse=True):
        a, b = _offset(lines, ref.start), _offset(lines, ref.end)
        src = src[:a] + f"{ref.prefix}.parents[{ref.level + delta}]" + src[b:]
    return src


def absolute_imports(src: str, tree: ast.AST, package: str) -> str:
    """``from .x import y`` in a file of package ``package`` becomes ``from package.x import y``."""
    lines = src.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
            a, b = _offset(lines, (node.lineno, node.col_offset)), _offset(lines, (node.end_lineno or 0, node.end_col_offset or 0))
            edits.append((a, b, re.sub(r"^from\s+\.+\s*[\w.]*\s+import", f"from {target} import", src[a:b], count=1)))
    for a, b, text in sorted(edits, reverse=True):
        src = src[:a] + text + src[b:]
    return src


# ---------------------------------------------------------------------------- the plan
def decide(rel: Path, mods: dict[str, str], folders: set[str]) -> Decision:
    here = folder_of(rel)
    src = (ROOT / rel).read_text()
    tree = ast.parse(src, str(rel))
    if here.split("/")[0] in KEEP:
        return Decision(rel, None, f"tests/{here} is kept apart")
    v = votes(tree, mods)
    anchor = here
    while anchor not in folders:
        anchor = anchor.rpartition("/")[0]
    candidates = {f: n for f, n in v.items() if _within(f, anchor)}
    if not candidates:
        return Decision(rel, None, "imports nothing of its room")
    ranked = candidates.most_common() if isinstance(candidates, Counter) else sorted(candidates.items(), key=lambda kv: -kv[1])
    best, n = ranked[0]
    if len(ranked) > 1 and ranked[1][1] == n:
        return Decision(rel, None, f"unsure: {best} and {ranked[1][0]} tie at {n}")
    if best == here or (here in folders and n <= v.get(here, 0)):
        return Decision(rel, None, "in place")
    if anchor == "" and not (n >= 2 and 2 * n > sum(v.values())):
        return Decision(rel, None, f"unsure: {best} has {n} of {sum(v.values())} imports, no majority across rooms")
    dest = Path("tests", *best.split("/"), rel.name) if best else Path("tests", rel.name)
    if (ROOT / dest).exists():
        return Decision(rel, None, f"unsure: {dest} exists")
    old_c, new_c = conftests(here), conftests(best)
    if not set(old_c) <= set(new_c):
        return Decision(rel, None, f"unsure: would lose {', '.join(str(c.relative_to(ROOT)) for c in set(old_c) - set(new_c))}")
    risky = [c for c in set(new_c) - set(old_c) if _risky_conftest(c)]
    if risky:
        return Decision(rel, None, f"unsure: {risky[0].relative_to(ROOT)} has autouse fixtures or hooks")
    refs = file_refs(tree, src)
    delta = len(dest.parts) - len(rel.parts)
    if refs is None or any(r.level + delta < 0 for r in refs):
        return Decision(rel, None, "unsure: a __file__ lookup it cannot re-level")
    return Decision(rel, dest, f"imports {n} module(s) of src/assay/{best or '.'}")


def plan() -> list[Decision]:
    mods = source_modules()
    folders = source_folders(mods)
    files = sorted(p.relative_to(ROOT) for p in TESTS.rglob("test_*.py") if "fixtures" not in p.relative_to(TESTS).parts)
    return [decide(rel, mods, folders) for rel in files]


# ---------------------------------------------------------------------------- applying it
def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def _dotted(p: Path) -> str:
    return ".".join(p.with_suffix("").parts)


def _packages(dest: Path) -> None:
    """An ``__init__.py`` in every new folder between tests/ and ``dest`` (the tree is a package)."""
    if not (TESTS / "__init__.py").exists():
        return
    here = ROOT
    for part in dest.parent.parts:
        here = here / part
        init = here / "__init__.py"
        if not init.exists():
            here.mkdir(parents=True, exist_ok=True)
            init.write_text("")
            git("add", str(init.relative_to(ROOT)))


def move(d: Decision) -> None:
    assert d.dest is not None
    src = (ROOT / d.path).read_text()
    tree = ast.parse(src)
    refs = file_refs(tree, src) or []
    src = relevel(src, refs, len(d.dest.parts) - len(d.path.parts))
    src = absolute_imports(src, ast.parse(src), _dotted(d.path.parent))
    _packages(d.dest)
    git("mv", str(d.path), str(d.dest))
    (ROOT / d.dest).write_text(src)
    git("add", str(d.dest))


def move_folders() -> list[tuple[Path, Path]]:
    """Apply :data:`FOLDER_MOVES` file by file (a file already at the destination stays, reported;
    an empty ``__init__.py`` there is the same file); the folders moved."""
    done = []
    for old, new in FOLDER_MOVES.items():
        src, dst = Path(old), Path(new)
        tracked = [Path(n) for n in git("ls-files", "--", old).splitlines()]
        if not tracked:
            continue
        _packages(dst / "x")
        for f in tracked:
            target = dst / f.relative_to(src)
            if (ROOT / target).exists():
                if f.name == "__init__.py" and not (ROOT / f).read_text().strip() and not (ROOT / target).read_text().strip():
                    git("rm", "-q", str(f))
                else:
                    print(f"stay  {f}  (unsure: {target} exists)")
                continue
            (ROOT / target).parent.mkdir(parents=True, exist_ok=True)
            git("mv", str(f), str(target))
        print(f"move  {old}/ -> {new}/")
        done.append((src, dst))
    return done


def fix_references(moves: list[Decision], folders: list[tuple[Path, Path]] = ()) -> list[str]:  # type: ignore[assignment]
    """Rewrite every tracked text file naming a moved file (or folder) by path or module; the files changed."""
    pairs = []
    for d in moves:
        assert d.dest is not None
        pairs.append((re.compile(rf"(?<![\w/.]){re.escape(d.path.as_posix())}(?![\w])"), d.dest.as_posix()))
        pairs.append((re.compile(rf"(?<![\w.]){re.escape(_dotted(d.path))}(?![\w])"), _dotted(d.dest)))
    for old, new in folders:
        pairs.append((re.compile(rf"(?<![\w/.]){re.escape(old.as_posix())}(?![\w.])"), new.as_posix()))
        pairs.append((re.compile(rf"(?<![\w.]){re.escape(_dotted(old))}(?![\w])"), _dotted(new)))
    changed = []
    for name in git("ls-files").splitlines():
        p = ROOT / name
        if p == Path(__file__).resolve() or p.suffix not in TEXT_SUFFIXES or not p.is_file() or p.stat().st_size > 1_000_000 or "fixtures" in p.parts:
            continue
        try:
            text = p.read_text()
        except UnicodeDecodeError:
            continue
        new = text
        for rx, repl in pairs:
            new = rx.sub(repl, new)
        if new != text:
            p.write_text(new)
            changed.append(name)
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="Only print the plan.")
    ap.add_argument("-v", "--verbose", action="store_true", help="Also print the tests left in place and why.")
    args = ap.parse_args(argv)
    if args.dry_run:
        for old, new in FOLDER_MOVES.items():
            if (ROOT / old).is_dir():
                print(f"move  {old}/ -> {new}/")
        folders: list[tuple[Path, Path]] = []
    else:
        folders = move_folders()
    decisions = plan()
    moves = [d for d in decisions if d.dest is not None]
    for d in decisions:
        if d.dest is not None:
            print(f"move  {d.path} -> {d.dest}  ({d.reason})")
        elif args.verbose or d.reason.startswith("unsure"):
            print(f"stay  {d.path}  ({d.reason})")
    if args.dry_run or not (moves or folders):
        print(f"{len(moves)} to move" if moves else "nothing to move")
        return 0
    for d in moves:
        move(d)
    changed = fix_references(moves, folders)
    for name in changed:
        git("add", name)
    print(f"moved {len(folders)} folders and {len(moves)} test files; references updated in {len(changed)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
