#!/usr/bin/env bash
# llama-cpp-python's OpenAI-compatible server in its own .venv-llama, for the tests that stream
# from a real model server. It builds llama.cpp from source: about 6 minutes on 2 cores the first
# time (pip keeps the wheel in its cache, so later runs take seconds).
# The local extra (setup.sh local) installs the same package with the same flags (llama-build.env),
# so whichever runs second takes the wheel from pip's cache in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PKG="llama-cpp-python[server]==0.3.36"
stamp=".venv-llama/.installed-0.3.36"
[ -f "$stamp" ] && exit 0
[ -x .venv-llama/bin/python ] || "$PY" -m venv .venv-llama
echo "Building llama-cpp-python (about 6 minutes the first time)..." >&2
source scripts/llama-build.env
.venv-llama/bin/python -m pip install --quiet --disable-pip-version-check "$PKG"
touch "$stamp"
