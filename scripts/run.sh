#!/usr/bin/env bash
# Set up (first time only) and start the app on http://127.0.0.1:7860, offline, no key needed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh local  # the app and its offline local model (torch CPU, SmolLM2)
exec .venv/bin/python app.py "$@"
