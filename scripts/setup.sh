#!/usr/bin/env bash
# Create .venv and install the app's requirements (pass "dev" for the test tools too).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
req=requirements.txt
[ "${1:-}" = "dev" ] && req=requirements-dev.txt
stamp=".venv/.installed-$(basename "$req")"
if [ ! -f "$stamp" ] || [ "$req" -nt "$stamp" ] || [ requirements.txt -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$req"
  touch "$stamp"
fi
