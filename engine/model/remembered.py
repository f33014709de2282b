"""What a load times once per machine, remembered: the thread count, int8 against fp32, the key/value cache's dtype.

Timing 1 and more threads (engine/model/threads.py), an int8 product against fp32
(engine/model/quant.py) and a step's attention over fp32 and bf16 keys (engine/model/attention.py)
cost a third of a second to two seconds a load, more than the rest of a warm load. Each choice
depends on the machine, not on the model folder, so it is kept in the user's cache folder (beside the
native step's library, owned and checked the same way: engine/model/native.py) under a key naming the
processor, its core count, torch's version and what was timed, and every later load on this machine
reads it. QWEN_REPROBE=1 times them again and keeps the new choices (after the machine changes its
load for good, say); QWEN_THREADS, QWEN_QUANT and QWEN_KV_DTYPE still override them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..settings import load_settings
from .threads import ThreadChoice

_FILE = "threads.json"
_MAX_BYTES = 64 << 10  # a larger file is not one this module wrote: ignored and written afresh


def probes_folder() -> Path:
    """$XDG_CACHE_HOME (or ~/.cache)/qwen-tool-explainer/probes."""
    from .native import cache_folder

    return cache_folder().parent / "probes"


def machine_key(kind: str) -> str:
    """The processor (its name and flags), its cores, torch's version and the product's kind, hashed."""
    import torch

    parts = [*_processor(), str(os.cpu_count()), torch.__version__, kind]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


@functools.lru_cache(maxsize=1)
def _processor() -> tuple[str, str]:
    """The processor's name and its flags line, from /proc/cpuinfo (empty where there is none), read once."""
    from .cpu_speed import read_cpu_flags

    name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            name = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        pass
    return name, read_cpu_flags() or ""


def remembered(file: str, kind: str, choose: Callable[[], Any], encode: Callable, decode: Callable) -> Any:
    """The choice remembered in `file` for this machine and `kind`, else `choose()`'s, kept.

    `encode(choice)` gives the JSON entry to keep (None: nothing to keep, a setting decided it);
    `decode(entry, when)` the choice again, its reason ending with `when` (None: an entry this code
    does not take, timed again)."""
    from .native import open_cache, read_own_file, write_own_file

    key = machine_key(kind)
    try:
        folder = open_cache(probes_folder())
    except OSError:
        return choose()  # no cache folder of this user's own: time it each load, as before
    try:
        known = _parse(read_own_file(folder, file))
        entry = known.get(key)
        if entry is not None and not load_settings().reprobe:
            when = time.strftime("%Y-%m-%d", time.localtime(entry["at"]))
            try:
                found = decode(entry, f" (timed on this machine on {when}; QWEN_REPROBE=1 times it again)")
            except (KeyError, TypeError, ValueError):
                found = None
            if found is not None:
                return found
        choice = choose()
        record = encode(choice)
        if record is not None:
            known[key] = {**record, "at": time.time()}
            write_own_file(folder, file, json.dumps(known, indent=1).encode())
        return choice
    finally:
        os.close(folder)


def remembered_threads(kind: str, choose: Callable[[], ThreadChoice]) -> ThreadChoice:
    """The thread choice remembered for this machine and `kind` ("fp32", "int8", "int8-rows"), else `choose()`'s."""

    def decode(entry: dict, when: str) -> ThreadChoice | None:
        threads = entry.get("threads")
        if type(threads) is not int or not 0 < threads <= 1024:
            return None
        if not isinstance(entry.get("reason"), str) or not isinstance(entry.get("decode_us"), dict):
            return None
        return ThreadChoice(threads, entry["reason"] + when, entry["decode_us"])

    # a timing is kept, not QWEN_THREADS or a single core
    return remembered(_FILE, kind, choose, lambda c: c.as_json() if c.decode_us else None, decode)


def _parse(raw: bytes | None) -> dict:
    """The remembered entries that are well formed (a dict with the time it was taken); anything else is forgotten."""
    if not raw or len(raw) > _MAX_BYTES:
        return {}
    try:
        known = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(known, dict):
        return {}
    return {
        key: entry
        for key, entry in known.items()
        if isinstance(entry, dict) and type(entry.get("at")) in (int, float) and isinstance(entry.get("reason"), str)
    }
