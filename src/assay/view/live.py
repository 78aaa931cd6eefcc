"""The live run: the runner's event stream relayed to the page as server-sent events, and the
viewer's control buttons sent to the runner (the same requests `assay ctl` sends)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, AsyncIterator

from assay.store.control_client import MAX_LINE, address

#: a comment line sent when nothing happened for this long, so a dead page is noticed and dropped
KEEPALIVE_S = 15.0


async def _open(path: Path, op: str, who: str, args: dict[str, Any]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    where = address(path)
    if where is None:
        return None
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", where["port"], limit=MAX_LINE)
    except OSError:
        return None
    writer.write((json.dumps({"token": where["token"], "op": op, "who": who, **args}) + "\n").encode())
    await writer.drain()
    return reader, writer


async def request(path: Path, op: str, who: str, **args: Any) -> dict[str, Any]:
    """One control request to the run's runner; an answer with ``ok`` False when none is running."""
    conn = await _open(path, op, who, args)
    if conn is None:
        return {"ok": False, "error": "no runner is running on this run"}
    reader, writer = conn
    try:
        line = await reader.readline()
    finally:
        writer.close()
    return json.loads(line) if line else {"ok": False, "error": "the runner closed the connection"}


async def sse(path: Path, who: str) -> AsyncIterator[str]:
    """``data: <event>`` lines from the runner, its state first; ``ended`` when the run ends."""
    conn = await _open(path, "subscribe", who, {})
    if conn is None:
        yield 'data: {"type": "ended"}\n\n'
        return
    reader, writer = conn
    try:
        while True:
            try:
                line = await asyncio.wait_for(reader.readline(), KEEPALIVE_S)
            except TimeoutError:
                yield ": keepalive\n\n"
                continue
            if not line:
                break
            event = json.loads(line)
            if event.get("type") == "state" or "ok" in event:
                event["type"] = "state"
            yield f"data: {json.dumps(event)}\n\n"
        yield 'data: {"type": "ended"}\n\n'
    finally:
        writer.close()
