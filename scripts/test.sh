#!/usr/bin/env bash
# Install what the tests need (Python packages; Debian's chromium and bubblewrap), then run them all.
set -euo pipefail
cd "$(dirname "$0")/.."
# --quick: the inner loop, everything but the browser tests and the slow ones (marked `slow`: many seeded
# generations, llama.cpp's server, a training run, a load test); CI runs everything
quick=()
if [ "${1:-}" = "--quick" ]; then
  shift
  quick=(-m "not browser and not slow")
fi
# llama-cpp-python compiles llama.cpp: a native build crashed with "Illegal instruction" on Q8_0 on one of these
# machines, so build without -march=native and turn on only the instruction sets this CPU lists in /proc/cpuinfo;
# pip caches the wheel afterwards (clear pip's cache before reusing it on another CPU)
if [ -z "${CMAKE_ARGS:-}" ]; then
  CMAKE_ARGS="-DGGML_NATIVE=OFF"
  flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
  has() { [[ " $flags " == *" $1 "* ]]; }
  has avx && CMAKE_ARGS="$CMAKE_ARGS -DGGML_AVX=ON"
  has avx2 && CMAKE_ARGS="$CMAKE_ARGS -DGGML_AVX2=ON"
  has fma && CMAKE_ARGS="$CMAKE_ARGS -DGGML_FMA=ON"
  has f16c && CMAKE_ARGS="$CMAKE_ARGS -DGGML_F16C=ON"
  has avx512f && CMAKE_ARGS="$CMAKE_ARGS -DGGML_AVX512=ON"
  export CMAKE_ARGS
fi
python -m pip install --quiet -r requirements-dev.txt
# installed above: the tests against llama.cpp's server fail rather than skip if it is missing
export REQUIRE_LLAMA_CPP=1
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
# compiled modules kept (__pycache__, ignored by git): where PYTHONDONTWRITEBYTECODE is set, every worker, server and
# child process compiled the site's modules and pytest rewrote every test file again (collection alone took 21
# CPU-seconds a worker on a clean clone against 12 with the cache)
unset PYTHONDONTWRITEBYTECODE
python -m ruff check engine app_pages ui tests bench app.py router.py
python -m ruff format --check engine app_pages ui tests bench app.py router.py
# three workers on two cores: the browser tests mostly wait on their servers and browsers, so more workers than
# cores overlap the waits (measured on a clean clone: 17:08 with two, 13:58 with four), but each worker starts a
# server, a browser and its imports of its own, and the suite is short of CPU: on a later machine three took 14:12
# and four 14:50, with 2.6 CPU-minutes less; a browser file stays on one worker (tests/conftest.py).
# TEST_WORKERS=0 runs everything in this process
python -m pytest -n "${TEST_WORKERS:-3}" --dist loadgroup "${quick[@]}" "$@"
