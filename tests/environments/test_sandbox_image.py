"""A sandbox over a task's image: the image is the read-only root (not the host's system), the
workspace is writable at the image's WORKDIR, the image's ENV applies, and the harness's own
Python is bound for the machinery only, never on the agent's PATH."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import pytest

from assay.environments.runtime import root_of
from assay.environments.store import ImageInfo, ImageStore
from assay.sandbox.base import SandboxSpec
from assay.sandbox.bwrap.backend import BwrapBackend
from assay.sandbox.image_root import ImageRoot
from assay.spec.budget import NetworkProfile
from tests.environments.conftest import EXAMPLES


def _run(root: ImageRoot, ws: Path, script: str) -> tuple[int | None, str, str]:
    async def go() -> tuple[int | None, str, str]:
        backend = BwrapBackend()
        if backend.binary is None:
            pytest.skip("no bwrap")
        sb = await backend.create(SandboxSpec(workspace=ws, network=NetworkProfile.none, image=root, label="img"))
        try:
            r = await sb.exec(["/bin/sh", "-c", script], timeout_s=60)
            return r.exit_code, r.stdout.decode(), r.stderr.decode()
        finally:
            await sb.destroy()
    return asyncio.run(go())


@pytest.fixture()
def suite_image(example_images: tuple[object, dict[str, ImageInfo]], image_store: ImageStore) -> ImageRoot:
    return root_of(example_images[1]["apt-jq-gawk"], image_store)


def test_the_root_is_the_image_read_only(suite_image: ImageRoot, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    code, out, err = _run(suite_image, ws, "command -v gawk; command -v python3; cat /etc/debian_version; "
                          "python3 -c 'import pandas, sys; print(sys.executable)'; "
                          "touch /usr/x 2>/dev/null && echo WROTE-USR; touch /etc/x 2>/dev/null && echo WROTE-ETC; "
                          f"test -e {EXAMPLES} && echo SEES-SUITE; echo hi > /workspace/out.txt; pwd")
    assert code == 0, err
    lines = out.split()
    assert lines[0] == "/usr/bin/gawk"  # from the image, whatever the host has
    assert lines[1] == "/usr/bin/python3" and lines[3] == "/usr/bin/python3"
    assert "WROTE-USR" not in out and "WROTE-ETC" not in out and "SEES-SUITE" not in out
    assert lines[-1] == "/workspace" and (ws / "out.txt").read_text() == "hi\n"


def test_the_harness_python_is_bound_but_not_on_path(suite_image: ImageRoot, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    harness = str(Path(sys.executable))
    code, out, err = _run(suite_image, ws, f"echo $PATH; test -x {harness} && echo BOUND; "
                          f"{harness} -c 'import ssl, assay.agents.reference.loop; print(7)'")
    assert code == 0, err
    path, *rest = out.split()
    assert str(Path(sys.executable).parent) not in path.split(":")
    assert rest == ["BOUND", "7"]  # the reference agent's loop imports over the image's libraries


def test_the_workspace_is_at_the_images_workdir_with_its_env(example_images: tuple[object, dict[str, ImageInfo]],
                                                              image_store: ImageStore, tmp_path: Path) -> None:
    root = root_of(example_images[1]["app-workdir"], image_store)
    assert root.workdir == "/app" and root.deviations
    ws = tmp_path / "ws"
    ws.mkdir()
    code, out, err = _run(root, ws, "pwd; echo $APP_HOME $REPORT_NAME; cat /opt/app/greet.txt; touch /app/made")
    assert code == 0, err
    assert out.split("\n")[:3] == ["/app", "/app report.txt", "image file"]
    assert (ws / "made").exists()


def test_no_image_keeps_the_hosts_system(tmp_path: Path) -> None:
    if shutil.which("gawk"):
        pytest.skip("the host has gawk")
    ws = tmp_path / "ws"
    ws.mkdir()

    async def go() -> int | None:
        sb = await BwrapBackend().create(SandboxSpec(workspace=ws, network=NetworkProfile.none, label="host"))
        try:
            return (await sb.exec(["/bin/sh", "-c", "command -v gawk"], timeout_s=30)).exit_code
        finally:
            await sb.destroy()
    assert asyncio.run(go()) != 0


def test_harness_endpoints_are_reached_over_an_image(suite_image: ImageRoot, tmp_path: Path) -> None:
    """The endpoint relay (the harness's Python, bound for the machinery) runs over the image."""
    from assay.sandbox.base import Endpoint
    from tests.sandbox.conftest import serve_text

    gw = serve_text(b"gateway-here")
    ws = tmp_path / "ws"
    ws.mkdir()

    async def go() -> str:
        ep = Endpoint("gateway", "127.0.0.1", gw.server_address[1])
        sb = await BwrapBackend().create(SandboxSpec(workspace=ws, network=NetworkProfile.harness, endpoints=(ep,),
                                                     image=suite_image, label="img-ep"))
        try:
            url = sb.endpoint_url("gateway") + "/v1/models"
            r = await sb.exec(["python3", "-c", f"import urllib.request; print(urllib.request.urlopen({url!r}, "
                               "timeout=5).read().decode())"], timeout_s=60)
            assert r.exit_code == 0, r.stderr
            return r.stdout.decode()
        finally:
            await sb.destroy()
    try:
        assert asyncio.run(go()).strip() == "gateway-here"
    finally:
        gw.shutdown()
        gw.server_close()
