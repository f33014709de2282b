"""What a load times once per machine, remembered: the torch thread count a model's kind of product runs best on.

Timing 1 and more threads (engine/model/threads.py) costs a third of a second a load, a good part of
the shipped model's whole load. The choice depends on the machine, not on the model folder, so it is
kept in the user's cache folder (beside the native step's library, owned and checked the same way:
engine/model/native.py) under a key naming the processor, its core count and torch's version, and
every later load on this machine reads it. QWEN_REPROBE=1 times it again and keeps the new choice
(after the machine changes its load for good, say); QWEN_THREADS still overrides both.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

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

    from .cpu_speed import read_cpu_flags

    name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            name = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        pass
    parts = [name, read_cpu_flags() or "", str(os.cpu_count()), torch.__version__, kind]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def remembered_threads(kind: str, choose: Callable[[], ThreadChoice]) -> ThreadChoice:
    """The thread choice remembered for this machine and `kind` ("fp32" or "int8"), else `choose()`'s, kept."""
    from .native import open_cache, read_own_file, write_own_file

    key = machine_key(kind)
    try:
        folder = open_cache(probes_folder())
    except OSError:
        return choose()  # no cache folder of this user's own: time it each load, as before
    try:
        raw = read_own_file(folder, _FILE)
        known = _parse(raw)
        entry = known.get(key)
        if entry is not None and not load_settings().reprobe:
            when = time.strftime("%Y-%m-%d", time.localtime(entry["at"]))
            reason = f"{entry['reason']} (timed on this machine on {when}; QWEN_REPROBE=1 times it again)"
            return ThreadChoice(entry["threads"], reason, entry["decode_us"])
        choice = choose()
        if choice.decode_us:  # a timing, not QWEN_THREADS or a single core
            known[key] = {**choice.as_json(), "at": time.time()}
            write_own_file(folder, _FILE, json.dumps(known, indent=1).encode())
        return choice
    finally:
        os.close(folder)


def _parse(raw: bytes | None) -> dict:
    """The remembered entries that are well formed; anything else is forgotten."""
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
        if isinstance(entry, dict)
        and type(entry.get("threads")) is int
        and 0 < entry["threads"] <= 1024
        and isinstance(entry.get("reason"), str)
        and isinstance(entry.get("decode_us"), dict)
        and isinstance(entry.get("at"), (int, float))
    }
