"""The reference agent's tools: the five basic ones (run in the workspace, inside the sandbox)
and the world tools a harness service offers through ``ASSAY_TOOLS_URL`` (shared contract 3)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from assay.harness.wiring import function_name

OUTPUT_CAP = 16_000


def _fn(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": {"type": "object", "properties": props, "required": required}}}


_S = {"type": "string"}
BUILTIN_SCHEMAS: dict[str, dict[str, Any]] = {
    "shell": _fn("shell", "Run a shell command in the workspace; returns exit code and output.", {"command": _S}, ["command"]),
    "read": _fn("read", "Read a text file.", {"path": _S}, ["path"]),
    "write": _fn("write", "Create or overwrite a file with the given content.", {"path": _S, "content": _S}, ["path", "content"]),
    "edit": _fn("edit", "Replace one exact occurrence of `old` with `new` in a file.", {"path": _S, "old": _S, "new": _S},
                ["path", "old", "new"]),
    "list": _fn("list", "List a directory.", {"path": _S}, []),
}


def _cap(text: str) -> tuple[str, bool]:
    return (text[:OUTPUT_CAP], True) if len(text) > OUTPUT_CAP else (text, False)


def run_builtin(name: str, args: dict[str, Any], *, timeout_s: float = 120) -> dict[str, Any]:
    """Run one basic tool; never raises (a failed tool is a result the model sees)."""
    t0 = time.monotonic()
    try:
        out = _BUILTINS[name](args, timeout_s)
    except Exception as e:  # noqa: BLE001 - the model sees the error, the agent goes on
        out = {"ok": False, "error": f"{type(e).__name__}: {e}", "output": ""}
    out["duration_s"] = round(time.monotonic() - t0, 4)
    return out


def _shell(args: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    try:
        p = subprocess.run(["/bin/sh", "-c", str(args["command"])], capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout_s:g}s", "output": "", "exit_code": None}
    text, truncated = _cap((p.stdout + p.stderr).decode(errors="replace"))
    return {"ok": p.returncode == 0, "exit_code": p.returncode, "output": text, "truncated": truncated,
            **({"error": f"exit code {p.returncode}"} if p.returncode else {})}


def _read(args: dict[str, Any], _t: float) -> dict[str, Any]:
    text, truncated = _cap(Path(args["path"]).read_text(errors="replace"))
    return {"ok": True, "output": text, "truncated": truncated}


def _write(args: dict[str, Any], _t: float) -> dict[str, Any]:
    p = Path(args["path"])
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(str(args.get("content", "")))
    return {"ok": True, "output": f"wrote {len(str(args.get('content', '')))} characters to {p}"}


def _edit(args: dict[str, Any], _t: float) -> dict[str, Any]:
    p = Path(args["path"])
    text = p.read_text()
    old, new = str(args["old"]), str(args.get("new", ""))
    n = text.count(old)
    if n == 0:
        return {"ok": False, "error": "old text not found", "output": ""}
    p.write_text(text.replace(old, new, 1))
    return {"ok": True, "output": f"replaced 1 of {n} occurrence(s) in {p}"}


def _list(args: dict[str, Any], _t: float) -> dict[str, Any]:
    p = Path(args.get("path") or ".")
    names = sorted(e.name + ("/" if e.is_dir() else "") for e in p.iterdir())
    text, truncated = _cap("\n".join(names))
    return {"ok": True, "output": text, "truncated": truncated}


_BUILTINS = {"shell": _shell, "read": _read, "write": _write, "edit": _edit, "list": _list}


class WorldTools:
    """World tools discovered at ``GET {ASSAY_TOOLS_URL}/tools`` and called by ``POST /call``."""

    def __init__(self, url: str | None, key: str | None, tools: list[dict[str, Any]]):
        self.url = url
        self.key = key
        self.tools = {function_name(t["name"]): t for t in tools}

    @staticmethod
    def from_env(allowed: list[str]) -> "WorldTools":
        url, key = os.environ.get("ASSAY_TOOLS_URL"), os.environ.get("ASSAY_TOOLS_KEY")
        if not url:
            return WorldTools(None, None, [])
        try:
            resp = httpx.get(url.rstrip("/") + "/tools", headers={"Authorization": f"Bearer {key}"}, timeout=30,
                             trust_env=False)
            resp.raise_for_status()
            listed = [t for t in resp.json() if isinstance(t, dict) and t.get("name")]
        except (httpx.HTTPError, ValueError):
            listed = []
        return WorldTools(url, key, listed)

    def schemas(self) -> list[dict[str, Any]]:
        return [{"type": "function", "function": {"name": fname, "description": t.get("description") or "",
                                                  "parameters": t.get("input_schema") or {"type": "object", "properties": {}}}}
                for fname, t in self.tools.items()]

    def has(self, fname: str) -> bool:
        return fname in self.tools

    def call(self, fname: str, args: dict[str, Any]) -> dict[str, Any]:
        t0 = time.monotonic()
        name = self.tools[fname]["name"]
        try:
            resp = httpx.post(f"{self.url.rstrip('/')}/call", json={"name": name, "arguments": args},
                              headers={"Authorization": f"Bearer {self.key}"}, timeout=60, trust_env=False)
            data = resp.json()
        except (httpx.HTTPError, ValueError) as e:
            return {"ok": False, "error": f"world call failed: {e}", "output": "", "duration_s": time.monotonic() - t0}
        ok = bool(data.get("ok"))
        out = json.dumps(data.get("result"), ensure_ascii=False) if ok else ""
        return {"ok": ok, "output": out, "world_tool": name, "duration_s": round(time.monotonic() - t0, 4),
                **({} if ok else {"error": str(data.get("error"))})}
