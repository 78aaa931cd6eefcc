"""A store of N sessions planted in a product's own format, for the store scenario.

Each product's adapter plants one conversation (and checks it is the only one). A store of
10⁴ sessions is planted here with the same writers, in bulk: Pi's session files one by one (they
are plain files), Hermes' ``state.db`` by its own ``SessionDB`` in one process, OpenClaw's legacy
session files imported by its own ``doctor --session-sqlite import`` once. Any other agent with
a ``seed_session`` is planted through it session by session.
"""

from __future__ import annotations

import dataclasses
import json
import uuid

from assay.agents.base import ConversationTurn
from assay.agents.history import chat_messages
from assay.agents.products.common import PROVIDER, python_env
from assay.agents.products.hermes import conversation as hermes_session
from assay.agents.products.openclaw import conversation as openclaw_session
from assay.agents.products.pi.conversation import EPOCH_MS, seeded_session
from assay.run.perf.apparatus import Session
from assay.spec.conversation import AgentSaid, UserSaid
from assay.untrusted import files as safe_files

HISTORY = (UserSaid(text="an earlier question"), AgentSaid(text="an earlier answer"))

#: Hermes' own SessionDB, writing many sessions in one process (payloads one per stdin line)
HERMES_BULK = """\
import json, os, sys
from pathlib import Path
from hermes_state import SessionDB
db = SessionDB(Path(os.environ["HERMES_HOME"]) / "state.db")
try:
    for line in sys.stdin:
        d = json.loads(line)
        db.create_session(d["id"], d["source"], model=d["model"], cwd=d["cwd"])
        for m in d["messages"]:
            db.append_message(d["id"], m["role"], content=m.get("content"), finish_reason=m.get("finish_reason"),
                              timestamp=m["timestamp"])
finally:
    db.close()
"""


async def plant_store(sess: Session, n: int) -> str | None:
    """Plant ``n`` one-exchange sessions in the agent's own store; why it could not, or None."""
    name = sess.agent.name
    try:
        if name == "hermes":
            return await _hermes(sess, n)
        if name == "openclaw":
            return await _openclaw(sess, n)
        for i in range(n):
            turn = ConversationTurn(1, str(uuid.uuid4()), HISTORY)
            await sess.agent.seed_session(dataclasses.replace(sess.ctx, turn=turn), turn)  # type: ignore[attr-defined]
    except Exception as e:  # noqa: BLE001 - the planting is assay's; it says why
        return f"planting {n} sessions in {name}'s own store failed: {type(e).__name__}: {e}"[:500]
    return None


def _messages() -> list[dict]:
    return chat_messages(HISTORY, lambda s: s)


async def _hermes(sess: Session, n: int) -> str | None:
    inst = sess.agent.require()  # type: ignore[attr-defined]
    ctx = sess.ctx
    lines = b"".join(hermes_session.seed_payload(str(uuid.uuid4()), ctx.sandbox.workspace_path, ctx.model or "",
                                                 _messages()) + b"\n" for _ in range(n))
    (ctx.home / "hermes").mkdir(parents=True, exist_ok=True)
    env = {**python_env(inst, ctx.home_inside), "HERMES_HOME": f"{ctx.home_inside}/hermes"}
    res = await ctx.sandbox.exec([str(inst.root / "venv" / "bin" / "python"), "-c", HERMES_BULK], env=env,
                                 cwd=ctx.sandbox.workspace_path, timeout_s=max(120.0, n * 0.05), stdin=lines)
    if res.exit_code != 0 or res.timed_out:
        return f"Hermes' SessionDB could not write {n} sessions (exit {res.exit_code}): " \
               f"{res.stderr.decode(errors='replace')[-300:]}"
    return None


async def _openclaw(sess: Session, n: int) -> str | None:
    inst = sess.agent.require()  # type: ignore[attr-defined]
    ctx = sess.ctx
    store: dict = {}
    msgs = _messages()
    for i in range(n):
        sid = str(uuid.uuid4())
        text = seeded_session(sid, ctx.sandbox.workspace_path, msgs, model=ctx.model or "", provider=PROVIDER)
        safe_files.write_new(ctx.home, f"{openclaw_session.LEGACY_DIR}/{sid}.jsonl", text.encode())
        store |= openclaw_session.legacy_store(sid, EPOCH_MS + 1000 * (i + 1))
    safe_files.write_new(ctx.home, f"{openclaw_session.LEGACY_DIR}/sessions.json", json.dumps(store).encode())
    env = sess.agent.openclaw_env(ctx, inst, paths=True)  # type: ignore[attr-defined]
    res = await ctx.sandbox.exec([str(inst.bin), *openclaw_session.IMPORT_ARGS], env=env,
                                 cwd=ctx.sandbox.workspace_path, timeout_s=max(180.0, n * 0.05))
    if res.exit_code != 0 or res.timed_out:
        return f"OpenClaw's importer failed on {n} sessions (exit {res.exit_code}): " \
               f"{res.stderr.decode(errors='replace')[-300:]}"
    return None


def list_argv(sess: Session) -> tuple[list[str], dict[str, str]] | str:
    """The product's own headless command listing its sessions (argv, env), or why it has none."""
    name, ctx = sess.agent.name, sess.ctx
    if name == "hermes":
        inst = sess.agent.require()  # type: ignore[attr-defined]
        return ([str(inst.root / "venv" / "bin" / "hermes"), "sessions", "list"],
                {**python_env(inst, ctx.home_inside), "HERMES_HOME": f"{ctx.home_inside}/hermes"})
    if name == "openclaw":
        inst = sess.agent.require()  # type: ignore[attr-defined]
        return [str(inst.bin), "sessions", "--json"], sess.agent.openclaw_env(ctx, inst, paths=True)  # type: ignore[attr-defined]
    if name == "pi":
        return "Pi lists its sessions only in an interactive picker (--resume); it has no headless list command"
    return f"{name} has no headless command that lists its sessions"


async def list_seconds(sess: Session) -> tuple[float | None, str | None]:
    """Seconds the product's own session list took over the store (None and why, if it could not)."""
    got = list_argv(sess)
    if isinstance(got, str):
        return None, got
    argv, env = got
    res = await sess.sandbox.exec(argv, env=env, cwd=sess.ctx.sandbox.workspace_path, timeout_s=sess.app.timeout_s)
    timing = sess.sandbox.execs[-1]
    if res.exit_code != 0 or res.timed_out:
        return None, f"the session list exited {res.exit_code}: {res.stderr.decode(errors='replace')[-300:]}"
    return timing.end - timing.start, None
