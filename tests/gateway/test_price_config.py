"""A price table the harness cannot use is the harness's configuration error: refused when read
(replay of a recorded table), and at run time an infra_error naming the gateway, never a verdict on
the agent (issue 28; before, a non-number price made every call a 500 and the agent `fail`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import assay.gateway.config as config
from assay.errors import GatewayError, UsageError
from assay.gateway.service import GatewayService
from assay.records.manifest import GatewayRecord
from tests.gateway.test_run_e2e import make_suite, run


def test_a_bad_price_reaching_the_gateway_is_infra_error_naming_the_harness(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    real = config.prices_setting
    # what an older assay bound, or a Python caller built: a table the load-time check never saw
    monkeypatch.setattr(config, "prices_setting", lambda default, path=None: {"assay-scripted": {"input": "cheap",
                                                                                                 "output": 2.0}})
    outcome = run(make_suite(tmp_path / "s"), tmp_path / "r")
    monkeypatch.setattr(config, "prices_setting", real)
    result, = outcome.results
    assert result.end_state.value == "infra_error", result
    text = json.dumps(result.model_dump(mode="json"))
    assert "harness configuration" in text and "price table" in text
    assert result.usage is None or result.usage.model_calls == 0  # the agent never ran against a broken gateway


def test_the_gateway_refuses_to_open_a_session_on_a_bad_table() -> None:
    svc = GatewayService(GatewayRecord(backend="scripted", model="assay-scripted", settings={"script": "/dev/null"},
                                       prices={"m": {"input": -1, "output": 1}}))
    with pytest.raises(GatewayError, match="harness configuration.*m.input"):
        svc.open_session(None)


def test_replay_of_a_run_with_a_bad_recorded_table_is_a_usage_error(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": "r1", "gateway": {
        "backend": "scripted", "model": "assay-scripted", "prices": {"assay-scripted": {"input": "x", "output": 1}}}}))
    from assay.spec.load import load_suite

    with pytest.raises(UsageError, match="manifest.json.*gateway.prices.assay-scripted.input"):
        config.gateway_record_from_cli(f"replay:{run_dir}", load_suite(make_suite(tmp_path / "s")))
