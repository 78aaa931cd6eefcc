"""One image store per test session, and the example suite's images built (or found) once in it.

The store is the default one (``$ASSAY_IMAGE_STORE`` in CI, else the user's cache), so a CI run
builds the example suite's bases once and every test here reuses them; a cold build's time is
printed. Building needs root (mmdebstrap's root mode) and mmdebstrap: elsewhere these tests skip.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from assay.environments.runtime import ensure_suite
from assay.environments.store import ImageInfo, ImageStore
from assay.spec.environment import EnvironmentSpec
from assay.spec.load import LoadedSuite, load_suite

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "environments"
#: a steps-form environment whose base is the example suite's (same packages): no second mmdebstrap
SHARED_PACKAGES = ["jq", "gawk", "sqlite3", "python3-pip"]


def shared_env(**kw: object) -> EnvironmentSpec:
    return EnvironmentSpec(base="debian:bookworm", packages=SHARED_PACKAGES, **kw)  # type: ignore[arg-type]


def oracle_and_nop(suite: Path, run: Path) -> dict[str, str]:
    """``assay run SUITE -a oracle,nop``: each agent's end state (one task)."""
    import json

    from assay.cli.main import main

    main(["run", str(suite), "-a", "oracle,nop", "-o", str(run)])
    return {doc["agent"]: doc["end_state"] for doc in
            (json.loads(p.read_text()) for p in run.glob("trials/*/attempts/1/result.json"))}


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "building a Debian base needs root (mmdebstrap --mode=root)"
    if shutil.which("mmdebstrap") is None:
        return "mmdebstrap is not installed (apt-get install mmdebstrap)"
    return None


@pytest.fixture(scope="session")
def image_store() -> ImageStore:
    why = _why_not()
    if why:
        pytest.skip(why)
    return ImageStore()


@pytest.fixture(scope="session")
def example_images(image_store: ImageStore) -> tuple[LoadedSuite, dict[str, ImageInfo]]:
    suite = load_suite(EXAMPLES)
    t0 = time.monotonic()
    images = ensure_suite(suite, store=image_store)
    print(f"\nexample suite images ready in {time.monotonic() - t0:.1f} s "
          f"({len({i.digest for i in images.values()})} image(s))", file=sys.stderr)
    return suite, images
