#!/usr/bin/env bash
# Set up everything the tests need on a fresh Debian machine, then lint and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
bash scripts/setup-llama-server.sh  # the real model server that engine tests stream from
# Debian's Chromium for the browser tests (never `playwright install`), CJK fonts for screenshots, espeak-ng.
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || need+=(fonts-noto-cjk)
command -v espeak-ng >/dev/null 2>&1 || need+=(espeak-ng)  # the offline voice (packages.txt on a Space)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_OFFLINE=1
.venv/bin/ruff check .
exec .venv/bin/python -m pytest "$@"
