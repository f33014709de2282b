"""engine/model/remembered.py: a machine's thread timing is taken once, read on every later load, taken again on
QWEN_REPROBE=1, and a file the server did not write is never trusted."""

from __future__ import annotations

import json
import os

import pytest

from engine.model import remembered
from engine.model.threads import ThreadChoice

TIMED = ThreadChoice(
    2, "a decode step on 2 threads took 0.55x the time of 1 thread here: 2 threads", {"1": 9.0, "2": 5}
)


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("QWEN_REPROBE", raising=False)
    return remembered.probes_folder()


def counting(choice: ThreadChoice = TIMED):
    calls = []

    def choose():
        calls.append(1)
        return choice

    return choose, calls


def test_the_first_load_times_and_every_later_one_reads(cache, monkeypatch):
    choose, calls = counting()
    first = remembered.remembered_threads("fp32", choose)
    assert first == TIMED and calls == [1]
    later = remembered.remembered_threads("fp32", choose)
    assert calls == [1] and later.threads == 2 and later.decode_us == TIMED.decode_us
    assert later.reason.startswith(TIMED.reason) and "QWEN_REPROBE=1 times it again" in later.reason
    # another kind of product is timed for itself
    remembered.remembered_threads("int8", choose)
    assert calls == [1, 1]
    monkeypatch.setenv("QWEN_REPROBE", "1")
    assert remembered.remembered_threads("fp32", choose) == TIMED and calls == [1, 1, 1]
    assert os.stat(cache).st_mode & 0o777 == 0o700 and os.stat(cache / "threads.json").st_mode & 0o777 == 0o600


def test_a_choice_no_timing_made_is_not_remembered(cache):
    choose, calls = counting(ThreadChoice(1, "torch sees one core", {}))
    remembered.remembered_threads("fp32", choose)
    remembered.remembered_threads("fp32", choose)
    assert calls == [1, 1] and not (cache / "threads.json").exists()


def planted(cache, entry: dict, mode: int = 0o600) -> None:
    cache.mkdir(parents=True, mode=0o700, exist_ok=True)
    os.chmod(cache.parent, 0o700)
    path = cache / "threads.json"
    path.write_text(json.dumps({remembered.machine_key("fp32"): entry}))
    os.chmod(path, mode)


GOOD = {"threads": 7, "reason": "planted", "decode_us": {}, "at": 0}


@pytest.mark.parametrize(
    ("entry", "mode"),
    [
        (GOOD, 0o666),  # others may write it: not the server's own
        ({**GOOD, "threads": 0}, 0o600),
        ({**GOOD, "threads": 10**9}, 0o600),
        ({**GOOD, "threads": "7"}, 0o600),
        ({**GOOD, "reason": None}, 0o600),
        ({"threads": 7}, 0o600),
    ],
)
def test_a_planted_or_malformed_record_is_timed_over(cache, entry, mode):
    planted(cache, entry, mode)
    choose, calls = counting()
    assert remembered.remembered_threads("fp32", choose) == TIMED and calls == [1]


def test_a_well_formed_record_of_the_servers_own_is_read(cache):
    planted(cache, GOOD)
    choose, calls = counting()
    assert remembered.remembered_threads("fp32", choose).threads == 7 and calls == []


def test_a_record_that_is_a_symlink_is_not_followed(cache, tmp_path):
    cache.mkdir(parents=True, mode=0o700)
    os.chmod(cache.parent, 0o700)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({remembered.machine_key("fp32"): GOOD}))
    (cache / "threads.json").symlink_to(elsewhere)
    choose, calls = counting()
    assert remembered.remembered_threads("fp32", choose) == TIMED and calls == [1]
    # the timing was written in place of the link, and the file it pointed at is as it was
    assert not (cache / "threads.json").is_symlink()
    assert json.loads(elsewhere.read_text()) == {remembered.machine_key("fp32"): GOOD}
