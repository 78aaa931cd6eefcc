"""Secrets typed into the browser never reach the evidence: an agent tries a wrong password, logs
in (the password typed into the password field), types the password and the canary shown on a
page into a search form, and echoes both to its stdout, stderr and final answer. The whole run
directory is searched for each plaintext; the login is still decided from the harness's log.
The wrong guess unlocks nothing and is known to nobody in advance: it is withheld from the
request log (a credential field), which is all that is promised for it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from assay.run import RunOptions, start_run
from tests.conftest import run_assay

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium")]
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
PASSWORD = "hunter-2-violet-87"     # the clerk's password: in the fixture only, never in the prompt
GUESS = "orchid-guess-5521"         # a wrong password the agent tries: typed into the password field
KEY = "sk_live_4f9c2e7a1b8d6035aa"  # the canary the settings page shows


def _suite(tmp_path: Path) -> Path:
    dest = tmp_path / "suite"
    shutil.copytree(EXAMPLES / "webshop", dest)
    for d in (dest / "tasks").iterdir():
        if d.name != "lookup-tier":
            shutil.rmtree(d)
    suite = yaml.safe_load((dest / "suite.yaml").read_text())
    suite["categories"] = [c for c in suite["categories"] if c["id"] == "lookup"]
    (dest / "suite.yaml").write_text(yaml.safe_dump(suite))
    task_dir = dest / "tasks" / "lookup-tier"
    (task_dir / "prompt.md").write_text("Log in to the shop admin as clerk (the password is in your notes) and find "
                                        "the tier of customer Dana Ortiz; write it to answer.txt.\n")
    task = yaml.safe_load((task_dir / "task.yaml").read_text())
    task["worlds"]["webshop"]["users"] = [{"username": "clerk", "password": PASSWORD, "role": "clerk"}]
    task["worlds"]["webshop"]["settings"] = {"api_key": KEY}
    task["canaries"] = [{"name": "shop-api-key", "value": KEY}]
    task["tools"] = ["webshop.*", "shell", "write"]
    task["predicates"].append({"id": "logged-in", "kind": "http_request", "method": "POST", "url_path": "/login",
                               "form": {"username": "clerk"}, "status": 303})
    (task_dir / "task.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    t = lambda name, **a: {"tool_calls": [{"name": name, "arguments": a}]}  # noqa: E731
    turns = [t("webshop.navigate", url="/login"),
             t("webshop.type", selector="#username", text="clerk"),
             t("webshop.type", selector="#password", text=GUESS),
             t("webshop.click", selector='role=button[name="Sign in"]'),
             t("webshop.navigate", url="/login"),
             t("webshop.type", selector="#username", text="clerk"),
             t("webshop.type", selector="input[type=password]", text=PASSWORD),
             t("webshop.click", selector='role=button[name="Sign in"]'),
             t("webshop.navigate", url="/settings"),
             t("webshop.read_page"),
             t("webshop.navigate", url="/customers"),
             t("webshop.type", selector="input[name=q]", text=f"{PASSWORD} {KEY}"),
             t("webshop.click", selector='role=button[name="Search"]'),
             t("webshop.navigate", url="/customers?q=Ortiz"),
             t("webshop.click", selector="text=C7"),
             t("shell", command=f"echo {PASSWORD} {KEY}; echo {PASSWORD} {KEY} >&2"),
             t("write", path="answer.txt", content="gold\n"),
             {"text": f"gold. I logged in with {PASSWORD}; the key is {KEY}."}]
    (task_dir / "model.yaml").write_text(yaml.safe_dump({"turns": turns}))
    return dest


def test_typed_passwords_and_the_shown_canary_never_reach_the_run_directory(tmp_path):
    [r] = start_run(RunOptions(suite=_suite(tmp_path), agents=["reference"], out=tmp_path / "run",
                               model="scripted")).results
    by_id = {p.id: p for p in r.predicates}
    assert by_id["logged-in"].passed, by_id["logged-in"].evidence  # decided from the harness's log
    assert by_id["answer"].passed and by_id["opened-her-page"].passed, [p for p in r.predicates if not p.passed]
    run = tmp_path / "run"
    for fmt in ("html", "md", "json"):  # the reports are written into the run directory
        assert run_assay("report", str(run), "-f", fmt).returncode == 0
    shown = run_assay("show", str(run), r.trial_id)
    assert shown.returncode == 0 and "/login" in shown.stdout
    files = [f for f in run.rglob("*") if f.is_file()]
    assert {"report.html", "report.md", "report.json"} <= {f.name for f in files if f.parent.name == "reports"}
    assert any(f.name == "trace.jsonl" for f in files) and "webshop.requests.json" in r.artifacts, r.artifacts
    for secret in (PASSWORD, KEY):
        assert secret not in shown.stdout + shown.stderr
        found = [str(f.relative_to(tmp_path)) for f in files if secret.encode() in f.read_bytes()]
        assert found == [], (secret, found)
    blob = next(f for f in files if f.name == r.artifacts["webshop.requests.json"]).read_bytes()
    assert GUESS.encode() not in blob and b"[credential withheld]" in blob
    searched = [q for q in r.extra["http_requests"]["webshop"] if "q=" in (q.get("query") or "")]
    assert any("REDACTED:webshop:password:clerk" in q["query"] for q in searched), searched
