"""Cold CI's image builds: every image the test suite builds, into an empty store, timed.

That is the example suite's images (``examples/environments``) and the images of the importers'
fixtures (``tests/fixtures/import``: Harbor, Terminal-Bench 1), imported as the tests import them.
Prints each part's time, the distinct bases (one per release is the aim: one mmdebstrap per CI
run) and the total. Root and mmdebstrap needed; the network reaches Debian and PyPI.

    .venv/bin/python bench/cold_ci.py                       # a fresh temporary store, removed after
    .venv/bin/python bench/cold_ci.py --store /tmp/cold     # that store (kept: point ASSAY_IMAGE_STORE at it)

A cold CI run is the test suite with ``ASSAY_IMAGE_STORE`` naming an empty folder, e.g.
``ASSAY_IMAGE_STORE=$(mktemp -d) scripts/test.sh``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from assay.environments.runtime import ensure_suite
from assay.environments.store import ImageStore
from assay.importers import import_suite
from assay.spec.load import load_suite

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", type=Path, help="an empty folder for the store (default: a temporary one)")
    args = ap.parse_args()
    root = args.store or Path(tempfile.mkdtemp(prefix="assay-cold-ci-"))
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise SystemExit(f"{root} is not empty: a cold build needs an empty store")
    store = ImageStore(root)
    work = Path(tempfile.mkdtemp(prefix="assay-cold-ci-suites-"))
    t_all = time.monotonic()
    try:
        suites = {"examples/environments": load_suite(ROOT / "examples" / "environments")}
        for fmt in ("harbor", "terminal-bench"):
            out = work / fmt
            import_suite(fmt, ROOT / "tests" / "fixtures" / "import" / fmt, out)  # refused tasks are left out
            if (out / "suite.yaml").is_file():
                suites[f"import {fmt}"] = load_suite(out)
        digests: dict[str, str] = {}
        for name, suite in suites.items():
            t0 = time.monotonic()
            images = ensure_suite(suite, store=store)
            print(f"{name:28} {len(images)} task image(s), {len({i.digest for i in images.values()})} distinct: "
                  f"{time.monotonic() - t0:.1f} s", flush=True)
            digests.update({i.digest: str(i.inputs.get("base", "")) for i in images.values()})
        bases = {b for b in digests.values() if b}
        print(f"distinct bases: {len(bases)}; images: {len(digests)}")
        print(f"cold build of everything the test suite builds: {time.monotonic() - t_all:.1f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.store is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
