#!/usr/bin/env bash
# Install what the tests need (Python packages; Debian's chromium and bubblewrap), then run them all.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -r requirements-dev.txt
# Debian packages: chromium for the browser tests, bubblewrap for run_tests's sandbox (its tests skip without it)
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium fonts-noto-color-emoji)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "missing Debian packages: ${missing[*]} (sudo apt-get install ${missing[*]}); the browser and sandbox tests need them" >&2
  fi
fi
python -m ruff check engine app_pages ui tests bench app.py
# two workers: the browser tests stay together on one (tests/conftest.py), the rest share both;
# TEST_WORKERS=0 runs everything in this process
python -m pytest -n "${TEST_WORKERS:-2}" --dist loadgroup "$@"
