#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh machine, then run the whole suite.
# Used verbatim by the README and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
start=$(date +%s)
step() { echo "== [$(( $(date +%s) - start ))s] $*"; }

# Debian packages: Chromium renders the HTML report in a test.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    step "apt-get install chromium"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
  else
    echo "note: chromium not installed and not root; the report rendering test will be skipped"
  fi
fi

# Debian packages: Prometheus and node-exporter's textfile collector scrape a live run and a finished
# run's textfile in tests/observe (about 1 minute).
if ! command -v prometheus >/dev/null 2>&1 || ! command -v prometheus-node-exporter >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    step "apt-get install prometheus prometheus-node-exporter"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus prometheus-node-exporter >/dev/null
  else
    echo "note: prometheus not installed and not root; the Prometheus tests in tests/observe will be skipped"
  fi
fi

# Debian packages: mmdebstrap builds the task images' Debian base (tests/environments: ONE base per
# release shared by the example suite and the importers' fixtures, and their images, built once per
# run into the image store; bench/cold_ci.py times it cold). A cold CI run: ASSAY_IMAGE_STORE=$(mktemp -d).
if ! command -v mmdebstrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    step "apt-get install mmdebstrap"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
  else
    echo "note: mmdebstrap not installed and not root; the image builds in tests/environments will be skipped"
  fi
fi

# Debian packages: a C compiler builds the sandbox's exec launcher (assay/sandbox/bwrap/launcher.c; without
# one the slower shell path runs, and the tests of the compiled launcher are skipped).
if ! command -v cc >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    step "apt-get install gcc libc6-dev"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null
  else
    echo "note: no C compiler; sandboxes use the shell launcher and its compiled one's tests are skipped"
  fi
fi

step "python venv and assay[test,local]"
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# uv installs what pip would (the same resolution from the same registry), downloading and
# installing in parallel: on a cold cache here [test] took 23 s against pip's 55 s, Phoenix's 147
# packages 12 s against 77 s. Where uv cannot be had or fails, pip does it.
UV=
if .venv/bin/python -m pip install -q 'uv>=0.5' >/dev/null 2>&1 && [ -x .venv/bin/uv ]; then
  UV=$ROOT/.venv/bin/uv
fi
# venv_install VENV_DIR ARGS...: pip's arguments (-q, -e, --no-deps), into that venv
venv_install() {
  local venv=$1
  shift
  if [ -n "$UV" ] && "$UV" pip install --python "$venv/bin/python" "$@"; then
    return 0
  fi
  [ -n "$UV" ] && echo "note: uv could not install $*; pip instead"
  "$venv/bin/python" -m pip install "$@"
}
# [local] builds llama-cpp-python from source on a cold cache (3.6 min on 2 cores with uv) so the
# local-model gateway backend answers a real completion in the tests. Built for any x86-64
# (GGML_NATIVE=OFF; llama.cpp picks its CPU kernels at run time): 0.3.36 built for this machine's
# own CPU (AVX-512) crashes with a segmentation fault on its first token. Without its multimodal
# library (LLAVA_BUILD=OFF: assay sends text only), which took a fifth of the build (4.5 -> 3.6 min).
export CMAKE_ARGS=${CMAKE_ARGS:--DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF}
venv_install .venv -q -e '.[test,local]'
# A wheel cached from an earlier, native build would crash the same way: one token in a child
# process, and a build of its own if it cannot answer. The crashing wheel leaves the caches and the
# new build takes its place there (built with --no-cache-dir, every later run built it again: 5 min).
if ! .venv/bin/python scripts/llama_smoke.py; then
  step "llama-cpp-python crashed on one token: building it again, its cached wheel removed ($CMAKE_ARGS)"
  llama=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))')
  .venv/bin/python -m pip cache remove llama_cpp_python >/dev/null 2>&1 || true  # no cache: nothing to remove
  [ -n "$UV" ] && "$UV" cache clean llama-cpp-python >/dev/null 2>&1 || true
  .venv/bin/python -m pip install -q --force-reinstall --no-deps "llama-cpp-python==$llama"
  .venv/bin/python scripts/llama_smoke.py || echo "note: the local model still cannot answer; its tests will fail"
fi

# A real OTLP trace backend for tests/observe: Arize Phoenix in a venv of its own (its ~150
# dependencies stay out of assay's venv; with pip about 5 minutes cold on 2 cores).
if [ ! -x .venv-phoenix/bin/phoenix ] && [ "${ASSAY_SKIP_PHOENIX:-0}" != 1 ]; then
  step "arize-phoenix in .venv-phoenix (OTLP trace backend for the tests)"
  "$PY" -m venv .venv-phoenix
  venv_install .venv-phoenix -q arize-phoenix
fi

# SWE-bench's own package (its 5.x task-repository reader), without its dependencies, in a venv of
# its own: tests/importers/test_swe_peer.py checks that assay's importer reads the format as its
# owner does. A check at test time, never a dependency of assay (one wheel, a few seconds).
if [ ! -x .venv-peers/bin/python ] || ! .venv-peers/bin/python -c 'import swebench.task.repo' 2>/dev/null; then
  step "swebench (its task-repository reader) in .venv-peers"
  "$PY" -m venv .venv-peers
  venv_install .venv-peers -q --no-deps 'swebench==5.0.2' pyyaml
fi
export ASSAY_REQUIRE_PEERS=1

if [ -x scripts/install-agents.sh ] && [ "${ASSAY_SKIP_AGENTS:-0}" != 1 ]; then
  step "install the real agents (Pi, OpenClaw, Hermes, DSH)"
  scripts/install-agents.sh
  # installed: a product test that then finds its agent missing fails instead of skipping
  export ASSAY_REQUIRE_AGENTS=1
fi

# Two workers (pytest-xdist; ASSAY_TEST_WORKERS=0 runs in this process): the suite alone keeps
# about one core busy. Each file runs on one worker, the product runs all on one, the Ray clusters
# all on one (tests/conftest.py:SERIAL_GROUPS). A worker that crashes (a native library's
# segmentation fault) ends the run naming its test: under --dist loadgroup, pytest-xdist 3.8.0
# (the newest release) hangs for good once it replaces a crashed worker (pytest-xdist#1323, #1378).
WORKERS=${ASSAY_TEST_WORKERS:-2}
step "pytest (${WORKERS} workers)"
set +e
if [ "$WORKERS" = 0 ]; then
  .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
else
  .venv/bin/python -m pytest -q -p no:cacheprovider -n "$WORKERS" --dist loadgroup --max-worker-restart 0 "$@"
fi
rc=$?
set -e
step "done (pytest exit $rc)"
exit $rc
