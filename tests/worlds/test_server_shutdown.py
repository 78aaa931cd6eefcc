"""The tool server stops quietly: an MCP client that opened the server's SSE stream leaves no task
to be destroyed while pending (every run that used MCP ended with that asyncio warning)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    import httpx
    from assay.worlds.service import WorldService
    from tests.worlds.conftest import make_handle, make_task

    async def main(tmp):
        svc = WorldService()
        await svc.start()
        try:
            sess = await svc.open(make_handle(tmp, make_task(tmp)))
            url = f"http://127.0.0.1:{sess.endpoints[0].port}/mcp/"
            headers = {"Authorization": f"Bearer {sess.env['ASSAY_TOOLS_KEY']}", "Accept": "text/event-stream",
                       "mcp-protocol-version": "2025-06-18"}
            async with httpx.AsyncClient() as c:
                async with c.stream("GET", url, headers=headers) as r:  # the stream an MCP client keeps open
                    print("stream", r.status_code, r.headers.get("content-type"), flush=True)
            await sess.close()
        finally:
            await svc.stop()

    asyncio.run(main(Path(sys.argv[1])))
""")


def test_stopping_after_an_mcp_event_stream_leaves_no_pending_task(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-X", "dev", "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "stream 200 text/event-stream" in proc.stdout  # the server really opened the SSE stream
    assert "Task was destroyed but it is pending" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
