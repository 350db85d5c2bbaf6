#!/usr/bin/env bash
# llama-cpp-python's OpenAI-compatible server in its own .venv-llama, for the tests that stream
# from a real model server. It builds llama.cpp from source: about 6 minutes on 2 cores the first
# time (pip keeps the wheel in its cache, so later runs take seconds).
# GGML_NATIVE=OFF: a build tuned to the build machine's CPU dies with an illegal instruction on
# the first generation on this machine kind; AVX2/FMA/F16C keep it fast on any x86-64 from 2013 on.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PKG="llama-cpp-python[server]==0.3.36"
stamp=".venv-llama/.installed-0.3.36"
[ -f "$stamp" ] && exit 0
[ -x .venv-llama/bin/python ] || "$PY" -m venv .venv-llama
echo "Building llama-cpp-python (about 6 minutes the first time)..." >&2
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
  .venv-llama/bin/python -m pip install --quiet --disable-pip-version-check "$PKG"
touch "$stamp"
