#!/usr/bin/env bash
# Install what the tests need (Python packages; Debian's chromium and bubblewrap), then run them all.
set -euo pipefail
cd "$(dirname "$0")/.."
# llama-cpp-python compiles llama.cpp: a native build crashed with "Illegal instruction" on Q8_0 on one of these
# machines, so build for AVX2 (and AVX512 only where this CPU lists avx512f); pip caches the wheel afterwards
if [ -z "${CMAKE_ARGS:-}" ]; then
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
  if grep -q -m1 -w avx512f /proc/cpuinfo 2>/dev/null; then CMAKE_ARGS="$CMAKE_ARGS -DGGML_AVX512=ON"; fi
  export CMAKE_ARGS
fi
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
