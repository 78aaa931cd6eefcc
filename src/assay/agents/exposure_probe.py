"""The exposure probe: run inside an agent's sandbox, it lists what an agent there can see.

Standard library only (it runs with ``python -I`` inside the sandbox, where assay's own imports
are not wanted). Argument: a JSON object with ``out`` (where to write the report), ``skip``
(mount targets the harness vouches for and checks itself: the read-only system, the Python
install, the agent's install folders), ``workspace`` (the agent's own files) and the bounds.
Any mount *below* a skipped target that is not itself a vouched-for target is walked anyway,
so a bind slipped under ``/usr`` is still seen.

The report: the mount table as the kernel shows it, the environment, and every readable
regular file outside the workspace with its size, its SHA-256 and (for small files) its text.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys

NEVER = ("/proc", "/sys", "/dev")


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _unescape(field: str) -> str:
    """A mountinfo path field with its octal escapes (``\\040`` for a space) decoded."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit() and len(field[i + 1:i + 4]) == 3:
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mount_points(mountinfo: str) -> list[str]:
    points = []
    for line in mountinfo.splitlines():
        parts = line.split()
        if len(parts) > 4:
            points.append(_unescape(parts[4]))
    return points


def main(args: dict) -> dict:
    skip: list[str] = args.get("skip", [])
    own: list[str] = [args["workspace"]] if args.get("workspace") else []
    max_files, digest_max, text_max, text_total = (args.get("max_files", 50000), args.get("digest_max", 16 << 20),
                                                   args.get("text_max", 64 << 10), args.get("text_total", 8 << 20))
    try:
        with open("/proc/self/mountinfo") as f:
            mountinfo = f.read()
    except OSError as e:
        mountinfo = f"unreadable: {e}"
    # mounts below a vouched-for target are walked all the same (a bind slipped under /usr)
    extra = [p for p in mount_points(mountinfo) if _under(p, skip) and p not in skip and not _under(p, list(NEVER))]
    starts = ["/", *extra]
    files: list[dict] = []
    seen: set[tuple[int, int]] = set()
    unreadable: list[str] = []
    truncated = False
    budget = text_total

    def visit(path: str, top: bool) -> None:
        nonlocal truncated, budget
        if truncated:
            return
        if not top and (_under(path, list(NEVER)) or _under(path, own) or path in skip):
            return
        try:
            st = os.lstat(path)
        except OSError:
            return
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return
        seen.add(key)
        if stat.S_ISDIR(st.st_mode):
            try:
                names = sorted(os.listdir(path))
            except OSError:
                unreadable.append(path)
                return
            for name in names:
                visit(os.path.join(path, name), False)
        elif stat.S_ISREG(st.st_mode):
            if len(files) >= max_files:
                truncated = True
                return
            entry: dict = {"path": path, "size": st.st_size}
            if st.st_size <= digest_max:
                try:
                    with open(path, "rb") as f:
                        data = f.read(digest_max + 1)
                    entry["sha256"] = hashlib.sha256(data).hexdigest()
                    if len(data) <= text_max and budget >= len(data):
                        entry["text"] = data.decode("utf-8", errors="replace")
                        budget -= len(data)
                except OSError:
                    entry["unreadable"] = True
            files.append(entry)

    for start in starts:
        visit(start, True)
    return {"probe": 1, "uid": os.getuid(), "cwd": os.getcwd(), "mountinfo": mountinfo, "env": dict(os.environ),
            "files": files, "unreadable_dirs": unreadable[:1000], "truncated": truncated}


if __name__ == "__main__":
    spec = json.loads(sys.argv[1])
    report = main(spec)
    with open(spec["out"], "w") as f:
        json.dump(report, f)
