#!/bin/sh
# Install the four product agents (Pi, OpenClaw, Hermes Agent, DeepSeek Harness) into the
# agent cache ($ASSAY_AGENTS_DIR or ~/.cache/assay/agents), from the npm registry and PyPI only.
# Idempotent: an agent already installed is not fetched again. CI calls this before the tests
# marked `agents`. Usage: scripts/install-agents.sh [pi openclaw hermes dsh]
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
py="${ASSAY_PYTHON:-$here/.venv/bin/python}"
[ -x "$py" ] || py=python3
command -v npm >/dev/null 2>&1 || { echo "install-agents: npm is required (apt-get install npm)" >&2; exit 2; }
start=$(date +%s)
"$py" -m assay.cli.main agents install "$@"
echo "install-agents: done in $(( $(date +%s) - start ))s"
"$py" -m assay.cli.main agents list
