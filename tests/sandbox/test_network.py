"""Network profiles: ``harness`` reaches only the spec's endpoints (through the bridge),
``none`` reaches nothing, ``host`` is the host's network (explicit opt-in)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from assay.sandbox.base import Endpoint, SandboxSpec
from assay.sandbox.bwrap.backend import BwrapBackend
from assay.spec.budget import NetworkProfile

from .conftest import LoopbackServer, serve_text

FETCH = """
import sys, urllib.request
for url in sys.argv[1:]:
    try:
        print(url, "OK", urllib.request.urlopen(url, timeout=3).read().decode())
    except Exception as e:
        print(url, "FAIL", type(e).__name__)
"""


async def _fetch(backend: BwrapBackend, ws: Path, network: NetworkProfile, endpoints: tuple[Endpoint, ...],
                 urls: list[str]) -> str:
    sb = await backend.create(SandboxSpec(workspace=ws, network=network, endpoints=endpoints))
    try:
        urls = [u.replace("{gateway}", sb.endpoint_url("gateway")) if "{gateway}" in u else u for u in urls]
        r = await sb.exec([sys.executable, "-I", "-c", FETCH, *urls], timeout_s=60)
        assert r.exit_code == 0, r.stderr
        return r.stdout.decode()
    finally:
        await sb.destroy()


async def test_harness_profile_bridges_endpoints_and_nothing_else(
        bwrap_backend: BwrapBackend, tmp_path: Path, loopback_server: LoopbackServer) -> None:
    gw = serve_text(b"gateway-here")
    try:
        ep = Endpoint("gateway", "127.0.0.1", gw.server_address[1])
        out = await _fetch(bwrap_backend, tmp_path, NetworkProfile.harness, (ep,),
                           ["{gateway}/v1/models", loopback_server.url + "/secret"])
    finally:
        gw.shutdown()
        gw.server_close()
    lines = out.splitlines()
    assert lines[0].endswith("OK gateway-here"), out
    assert "FAIL" in lines[1] and "host-loopback-secret" not in out
    assert loopback_server.hits == []


async def test_none_profile_reaches_nothing(bwrap_backend: BwrapBackend, tmp_path: Path,
                                            loopback_server: LoopbackServer) -> None:
    ep = Endpoint("gateway", "127.0.0.1", loopback_server.port)
    sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path, network=NetworkProfile.none, endpoints=(ep,)))
    try:
        with pytest.raises(KeyError):
            sb.endpoint_url("gateway")
        r = await sb.exec([sys.executable, "-I", "-c", FETCH, loopback_server.url + "/x", "http://127.0.0.1:1/"],
                          timeout_s=60)
    finally:
        await sb.destroy()
    assert r.stdout.decode().count("FAIL") == 2
    assert loopback_server.hits == []


async def test_host_profile_is_the_host_network(bwrap_backend: BwrapBackend, tmp_path: Path,
                                                loopback_server: LoopbackServer) -> None:
    ep = Endpoint("gateway", "127.0.0.1", loopback_server.port)
    out = await _fetch(bwrap_backend, tmp_path, NetworkProfile.host, (ep,), ["{gateway}/opted-in"])
    assert "OK host-loopback-secret" in out
    assert loopback_server.hits == ["/opted-in"]


async def test_unknown_endpoint_is_a_key_error(bwrap_backend: BwrapBackend, tmp_path: Path) -> None:
    sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path))
    try:
        with pytest.raises(KeyError):
            sb.endpoint_url("nope")
    finally:
        await sb.destroy()
