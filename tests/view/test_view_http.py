"""The viewer over HTTP, its guard first: loopback only without a token, forms only from its own
pages, no other host name; tampered and half-written runs shown for what they are, never a 500;
what the agent wrote escaped."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from tests.view.conftest import cli


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def post(base: str, path: str, body: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    u = urlparse(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    c.request("POST", path, body=body, headers={"Content-Type": "application/x-www-form-urlencoded", **(headers or {})})
    r = c.getresponse()
    return r.status, r.read().decode()


def test_beyond_loopback_needs_a_token(runs_dir: Path) -> None:
    res = cli("view", str(runs_dir), "--host", "0.0.0.0", "--port", "0")
    assert res.returncode == 2 and "--token" in res.stderr and "Traceback" not in res.stderr


def test_forms_need_the_pages_secret_and_the_host_must_be_ours(viewer: str, runs_dir: Path) -> None:
    status, _ = post(viewer, "/run/r2/audit", "trial=x&label=true&by=me")
    assert status == 403
    status, _ = get(viewer + "/", {"Host": "evil.example:80"})
    assert status == 403
    assert not list((runs_dir / "r2" / "scores").glob("labels-*.json"))


def verified(viewer: str) -> dict[str, list[str]]:
    """The viewer's background verification once it has nothing left (bounded)."""
    deadline = time.monotonic() + 120
    while (st := json.loads(get(viewer + "/verifying")[1]))["pending"]:
        assert time.monotonic() < deadline, f"still verifying: {st}"
        time.sleep(0.05)
    return st


def test_run_list_names_tampered_files_and_half_written_runs(viewer: str) -> None:
    status, html = get(viewer + "/")
    assert status == 200 and "UNREADABLE" in html and "broken" in html
    row = html.split("data-run='tampered'", 1)[1].split("</tr>", 1)[0]
    assert "TAMPERED" in row or "verifying…" in row  # never its numbers as if they held
    assert verified(viewer)["tampered"] == ["tampered"]
    status, html = get(viewer + "/")
    assert "TAMPERED" in html and "result.json" in html and "verifying…" not in html
    status, html = get(viewer + "/run/tampered")
    assert status == 200 and "TAMPERED" in html and "result.json" in html
    assert "strict rate" not in html and "%" not in html.split("<body>", 1)[1]  # none of its numbers
    status, html = get(viewer + "/run/broken")
    assert status == 200 and "manifest.json" in html
    assert get(viewer + "/run/nope")[0] == 404
    assert get(viewer + "/run/..%2F..%2Fetc")[0] == 404


def test_agent_output_is_escaped(viewer: str) -> None:
    status, html = get(viewer + "/run/r1")
    assert status == 200 and "data-src='/run/r1/figures'" in html  # drawn apart: the page opens at once
    status, figs = get(viewer + "/run/r1/figures")
    assert status == 200 and figs.count("<svg") >= 2  # the static report's figures
    assert get(viewer + "/run/r1")[1].count("<svg") >= 2  # kept: drawn into the page from now on
    tid = html.split("/run/r1/trial/", 1)[1].split("'", 1)[0]
    status, html = get(viewer + f"/run/r1/trial/{tid}")
    assert status == 200
    assert "<script>window.pwned" not in html and "&lt;script&gt;window.pwned" in html
    assert "\x1b" not in html and "\\x1b[2J" in html
