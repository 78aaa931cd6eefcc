"""Install detection, the cache layout, and the CLI over it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay.agents.products import install
from assay.agents.products.pi.adapter import PiAgent
from assay.cli.main import main
from assay.errors import AgentUnavailable
from tests.conftest import assay_env, cli_timeout


def fake_npm_install(root: Path, version: str = "1.6.0", *, marker: bool = True) -> Path:
    d = root / "pi" / "1.6.0"
    pkg = d / "node_modules/@earendil-works/pi-coding-agent"
    pkg.mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"version": version}))
    (d / "node_modules/.bin").mkdir()
    (d / "node_modules/.bin/pi").write_text("#!/bin/sh\n")
    if marker:
        (d / install.MARKER).write_text(json.dumps({"version": version, "runtime": "node v24.0.0", "seconds": 3.0}))
    return d


def test_find_needs_the_marker_and_the_binary(tmp_path: Path) -> None:
    d = fake_npm_install(tmp_path, marker=False)
    assert install.find("pi", root=tmp_path) is None  # an interrupted install is never used
    (d / install.MARKER).write_text(json.dumps({"version": "1.6.0", "runtime": "node v24.0.0"}))
    found = install.find("pi", root=tmp_path)
    assert found is not None and found.version == "1.6.0" and found.bin == d / "node_modules/.bin/pi"
    assert found.read_only_paths() == [d]
    (d / "node_modules/.bin/pi").unlink()
    assert install.find("pi", root=tmp_path) is None
    assert install.installed_version(install.specs()["pi"], d) == "1.6.0"


def test_venv_install_mounts_its_base_python(tmp_path: Path) -> None:
    d = tmp_path / "hermes" / "0.19.0"
    (d / "venv/bin").mkdir(parents=True)
    base = Path(sys.base_prefix)
    (d / "venv/pyvenv.cfg").write_text(f"home = {base / 'bin'}\nversion = 3.11\n")
    site = d / "venv/lib/python3.11/site-packages/hermes_agent-0.19.0.dist-info"
    site.mkdir(parents=True)
    inst = install.Installation("hermes", "0.19.0", d, d / "venv/bin/hermes", "python")
    assert inst.read_only_paths() == ([d, base] if base != Path("/usr") else [d])
    assert install.installed_version(install.specs()["hermes"], d) == "0.19.0"


def test_agent_not_installed_is_unusable_with_a_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_AGENTS_DIR", str(tmp_path))
    info = PiAgent().info()
    assert not info.usable and "assay agents install pi" in info.detail
    fake_npm_install(tmp_path)
    info = PiAgent().info()
    assert info.usable and info.version == "1.6.0"
    assert set(info.config["tracks"]) == {"controlled", "native"}
    assert PiAgent().mounts(None)[0].target == str(tmp_path / "pi" / "1.6.0")  # type: ignore[arg-type]


def test_unknown_agent_is_refused() -> None:
    with pytest.raises(AgentUnavailable):
        install.install("bogus")


@pytest.mark.slow
def test_failed_install_leaves_no_usable_agent(tmp_path: Path) -> None:
    """A version the registry does not have: pip fails, no marker is written, find() says None."""
    with pytest.raises(AgentUnavailable) as e:
        install.install("dsh", version="0.0.0.dev999999", root=tmp_path)
    assert "install step failed" in str(e.value)
    assert install.find("dsh", version="0.0.0.dev999999", root=tmp_path) is None
    assert (tmp_path / "dsh" / "0.0.0.dev999999.install.log").read_text()


def test_cli_list_and_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**assay_env(), "ASSAY_AGENTS_DIR": str(tmp_path)}
    fake_npm_install(tmp_path)
    out = subprocess.run([sys.executable, "-m", "assay.cli.main", "agents", "list", "--json"], env=env,
                         capture_output=True, text=True, timeout=cli_timeout())
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["pi"]["usable"] and rows["pi"]["version"] == "1.6.0"
    assert not rows["hermes"]["usable"] and "assay agents install hermes" in rows["hermes"]["detail"]
    assert rows["nop"]["usable"]
    assert main(["agents", "install", "bogus"]) == 2
    assert main(["agents", "install", "pi", "hermes", "--version", "1.0"]) == 2
    # already installed: returns at once, nothing downloaded
    # (monkeypatch restores the suite's own value: deleting it hid every installed product from
    # every later test, which then skipped as "not installed")
    monkeypatch.setenv("ASSAY_AGENTS_DIR", str(tmp_path))
    assert main(["agents", "install", "pi"]) == 0
    assert "pi 1.6.0" in capsys.readouterr().out


def fake_hermes_install(root: Path, *, with_mcp: bool) -> Path:
    d = root / "hermes" / "0.19.0"
    (d / "venv/bin").mkdir(parents=True)
    (d / "venv/bin/hermes").write_text("#!/bin/sh\n")
    site = d / "venv/lib/python3.11/site-packages"
    site.mkdir(parents=True)
    if with_mcp:
        (site / "mcp").mkdir()
        (site / "mcp/__init__.py").write_text("")
    (d / install.MARKER).write_text(json.dumps({"version": "0.19.0", "runtime": "python 3.11"}))
    return d


def test_hermes_is_installed_with_its_mcp_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.agents.products.hermes.adapter import HermesAgent

    assert install.spec_for("hermes").requirement == "hermes-agent[mcp]==0.19.0"
    assert install.spec_for("dsh").requirement == "deepseek-harness-sdk==0.2.1rc2"
    monkeypatch.setenv("ASSAY_AGENTS_DIR", str(tmp_path))
    d = fake_hermes_install(tmp_path, with_mcp=False)
    found = install.find("hermes")
    assert found is not None and not found.has("mcp")
    info = HermesAgent().info()  # an older install: usable, world tools through the shim, and why
    assert info.usable and info.config["world_tools"]["exposure"].startswith("shim:")
    assert "assay agents install hermes" in info.config["world_tools"]["why"]
    # `assay agents install hermes` completes it in place with the extra (pip stands in for PyPI here)
    (d / "venv/bin/pip").write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/pip.args\n"
                                    f"mkdir -p {d}/venv/lib/python3.11/site-packages/mcp\n"
                                    f"touch {d}/venv/lib/python3.11/site-packages/mcp/__init__.py\n")
    (d / "venv/bin/pip").chmod(0o755)
    again = install.install("hermes")
    assert again.has("mcp") and again.root == d
    assert (tmp_path / "pip.args").read_text().split() == ["install", "--no-input", "hermes-agent[mcp]==0.19.0"]
    assert HermesAgent().info().config["world_tools"]["exposure"].startswith("mcp:")


def test_completing_an_install_that_fails_says_so(tmp_path: Path) -> None:
    d = fake_hermes_install(tmp_path, with_mcp=False)
    (d / "venv/bin/pip").write_text("#!/bin/sh\necho 'no network' >&2\nexit 1\n")
    (d / "venv/bin/pip").chmod(0o755)
    with pytest.raises(AgentUnavailable, match="install step failed"):
        install.install("hermes", root=tmp_path)
    found = install.find("hermes", root=tmp_path)
    assert found is not None and not found.has("mcp")  # the old install is left as it was, still usable
