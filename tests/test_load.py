"""Many users at once on one shared tiny model (slow: about 150 sampled generations, tens of seconds).

Six sessions, three requests each, start together on the process's one engine; each
session's tokens must equal what the same request gives alone, with no failure. The
figures come from bench/bench_load.py, which prints them as JSON.
"""

from __future__ import annotations

import json

import pytest

from bench.bench_load import run_load

pytestmark = pytest.mark.slow


def test_six_sessions_at_once_get_exactly_what_they_get_alone(tiny_engine):
    figures = run_load(tiny_engine, sessions=6, requests=3, max_new_tokens=12, timeout=240)
    print(json.dumps(figures))
    assert figures["failures"] == 0, figures["failure_messages"]
    assert figures["mismatches"] == []
    assert figures["completed"] == figures["requests"] == 18
    assert tiny_engine.lock.acquire(blocking=False)
    tiny_engine.lock.release()
