"""An HTTP request body from a sandbox (the agent's, or its browser's), read off an ASGI
``receive`` without letting its size decide the harness's memory."""

from __future__ import annotations

from typing import Awaitable, Callable


async def read_body(receive: Callable[[], Awaitable[dict]], limit: int) -> tuple[bytes, bool]:
    """The whole body read; at most ``limit`` bytes of it kept, and whether it was longer."""
    chunks: list[bytes] = []
    size = 0
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            break
        chunk = msg.get("body", b"")
        size += len(chunk)
        if size <= limit:
            chunks.append(chunk)
        if not msg.get("more_body"):
            break
    return b"".join(chunks), size > limit
