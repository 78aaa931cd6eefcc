"""`assay gateway serve` as a real process: prints URL and key, answers, stops on SIGINT."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import openai

from assay.cli.main import main
from tests.conftest import assay_env


def test_serve_scripted(tmp_path: Path, script_file: Path) -> None:
    trace = tmp_path / "t.jsonl"
    p = subprocess.Popen([sys.executable, "-m", "assay.cli.main", "gateway", "serve", "--script", str(script_file),
                          "--key", "sk-cli-test-0123456789", "--trace", str(trace)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=assay_env())
    try:
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            line = p.stdout.readline()
            if line.startswith("ASSAY_GATEWAY_URL="):
                url = line.strip().split("=", 1)[1]
            if not line and p.poll() is not None:
                break
        assert url, p.stderr.read()
        c = openai.OpenAI(base_url=url + "/v1", api_key="sk-cli-test-0123456789", max_retries=0)
        r = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}])
        assert r.choices[0].message.content == "Looking."
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(30)
    assert p.returncode == 0
    assert "model_response" in trace.read_text() and "sk-cli-test" not in trace.read_text()


def test_serve_without_script_is_usage_error() -> None:
    assert main(["gateway", "serve", "--backend", "scripted"]) == 2
    assert main(["gateway", "serve", "--backend", "nope"]) == 2
