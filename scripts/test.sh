#!/usr/bin/env bash
# Install what the tests need (Python packages, and Debian's chromium for the browser tests), then run them all.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -r requirements-dev.txt
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null
  else
    echo "chromium is missing: install Debian's chromium (sudo apt-get install chromium) for the browser tests" >&2
  fi
fi
python -m ruff check engine pages tests bench app.py
python -m pytest "$@"
