"""Eight sessions at once, two of them running hostile playground tests (slow: about a minute and a half).

Six ordinary sessions (tiny-model requests, then run_tests on a passing test) run alone, then
together, then together beside two sessions that run hostile tests for as long as they last:
one hides its output (os.dup2) and spins, one writes 100 MB. The ordinary sessions must all
finish; every hostile run must be stopped (killed at the limit, or out of disk) and over within
2 s of its limit; no process of any run may be left. How much the hostile pair slows the others
is a timing, so it is bench/bench_load.py --hostile's to report and judge, not this test's.
"""

from __future__ import annotations

import json

import pytest

from bench.bench_load import run_hostile_load
from engine.harness import sandbox

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not sandbox.bwrap_works() and sandbox.landlock_abi() < 1,
        reason="this machine has neither bubblewrap nor Landlock: run_tests is refused",
    ),
]


def test_hostile_tests_do_not_slow_six_other_sessions_or_outlive_their_limit(tiny_engine):
    figures = run_hostile_load(tiny_engine, sessions=6, requests=2, max_new_tokens=8, test_seconds=3.0, timeout=240)
    print(json.dumps(figures))
    assert figures["failures"] == []
    assert figures["processes_left"] == 0
    assert figures["hostile_past_limit_max_s"] <= 2.0
    spins, writes = figures["hostile_runs"]["spin"], figures["hostile_runs"]["write"]
    assert spins and {r["stopped_by"] for r in spins} == {"killed at the time limit"}
    assert writes and {r["stopped_by"] for r in writes} <= {"disk full (the tmpfs)", "cap on new files"}
    assert all(r["left"] == 0 for r in spins + writes)
