"""A real OpenAI-compatible judge server on loopback (the paid judge model cannot exist here),
reached through assay's own gateway (upstream backend). Its policy is chosen per test."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

Policy = Callable[[str, str], str]  # (answer A, answer B) -> the judge's raw reply text


def answers_of(user: str) -> tuple[str, str]:
    """The two answers as a naive reader of the prompt finds them: between their fences where the
    prompt has fences, else between the first "Answer A:", "Answer B:" and "Which answer"."""
    m = re.search(r"Answer A:\n<<<(\w+)>>>\n(.*?)\n<<<end \1>>>\n\nAnswer B:\n<<<\1>>>\n(.*?)\n<<<end \1>>>",
                  user, re.DOTALL)
    if m is not None:
        return m.group(2), m.group(3)
    m = re.search(r"Answer A:\n(.*?)\n\nAnswer B:\n(.*?)\n\nWhich answer", user, re.DOTALL)
    assert m is not None, user
    return m.group(1), m.group(2)


class FakeJudge:
    def __init__(self, policy: Policy):
        self.policy = policy
        self.calls = 0
        self.prompts: list[str] = []  # every judge prompt it was sent, in order
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                judge.calls += 1
                judge.prompts.append(body["messages"][-1]["content"])
                a, b = answers_of(body["messages"][-1]["content"])
                text = judge.policy(a, b)
                reply = {"id": f"j{judge.calls}", "object": "chat.completion", "model": body.get("model", "judge"),
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def model_arg(self) -> str:
        return f"upstream:http://127.0.0.1:{self.server.server_address[1]}/v1#judge-model"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def verdict(v: str) -> str:
    return json.dumps({"verdict": v, "reason": "by the rubric"})


@pytest.fixture
def fake_judge() -> Iterator[Callable[[Policy], FakeJudge]]:
    made: list[FakeJudge] = []

    def make(policy: Policy) -> FakeJudge:
        made.append(FakeJudge(policy))
        return made[-1]

    yield make
    for j in made:
        j.close()
