"""The KV cache of prompts already read, kept per loaded model, so the next run prefills only what is new.

Every run on a page starts with the same system prompt and tool definitions; reading them
again is most of a cold first token on a CPU. After a run's prompt pass, its key/value
tensors are kept here under the prompt's exact token ids. The next run looks for the kept
prompt sharing the longest run of leading ids with its own, starts from a copy of that
cache cut to the shared length, and feeds the model only the rest (at least the last token,
whose logits the first step needs). This is vLLM's automatic prefix caching, by exact ids
and in whole prompts rather than blocks.

Rules (several sessions share one model, each run with its own cache):
- a kept cache is never handed out: a run gets a copy of the shared part (cloned tensors),
  so nothing it does can change what another run starts from;
- bounded: at most `max_entries` prompts and `max_bytes` of tensors, least recently used
  dropped first (QWEN_PREFIX_CACHE_MB sets the bytes; 0 turns the cache off);
- one lock guards the table; copies are made outside it.

Only caches made of transformers' DynamicLayer (full attention, what Qwen3 uses) or the compact
forward's KVCache (engine/model/fast_forward.py, full attention too) are kept; any other kind
of layer (sliding window, recurrent state) is simply not cached.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ..settings import load_settings

DEFAULT_MAX_ENTRIES = 8
DEFAULT_MAX_MB = 512


@dataclass
class PrefixStats:
    """What the cache has done, for a bench or a test: lookups that found a prefix, and tokens not recomputed."""

    hits: int = 0
    misses: int = 0
    reused_tokens: int = 0
    stored: int = 0
    evicted: int = 0
    last_reused: int = 0  # tokens the latest lookup reused


@dataclass
class _Entry:
    ids: np.ndarray  # the prompt's token ids (int64)
    layers: list  # per layer, (keys, values) with the sequence on dim -2; never handed out
    nbytes: int


@dataclass
class PrefixCache:
    """Kept prompt caches of one loaded model; see the module docstring for the rules."""

    max_entries: int = DEFAULT_MAX_ENTRIES
    max_bytes: int = DEFAULT_MAX_MB * 2**20
    stats: PrefixStats = field(default_factory=PrefixStats)
    _entries: OrderedDict = field(default_factory=OrderedDict, repr=False)  # key: tuple(ids) -> _Entry
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def enabled(self) -> bool:
        return self.max_entries > 0 and self.max_bytes > 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(e.nbytes for e in self._entries.values())

    def clear(self) -> None:
        """Drop every kept prompt and start the counts afresh."""
        with self._lock:
            self._entries.clear()
            self.stats = PrefixStats()

    def lookup(self, prompt_ids: list[int], config, make_cache=None):
        """(a fresh cache holding the longest kept prefix of `prompt_ids`, its length).

        The length is at most len(prompt_ids) - 1: the model still reads the last prompt token
        to give the first step's logits. (an empty cache, 0) when nothing matches. The cache is a
        DynamicCache, or what `make_cache(layers, length)` makes of the kept (keys, values) per
        layer (it must copy their first `length` tokens, never keep them: engine/model/fast_forward.py)."""
        if make_cache is None:

            def make_cache(layers, length):
                from transformers import DynamicCache

                # a copy of the shared part only: the run appends to it; the kept tensors stay as they are
                copied = [(k[..., :length, :].clone(), v[..., :length, :].clone()) for k, v in layers]
                return DynamicCache(ddp_cache_data=copied, config=config) if layers else DynamicCache(config=config)

        ids = np.asarray(prompt_ids, dtype=np.int64)
        best, length = None, 0
        if self.enabled and len(ids) > 1:
            with self._lock:
                for key, entry in self._entries.items():
                    shared = _shared_length(entry.ids, ids)
                    if shared > length:
                        best, length = key, shared
                if best is not None:
                    self._entries.move_to_end(best)
                    layers = self._entries[best].layers
            length = min(length, len(ids) - 1)
        if best is None or length == 0:
            with self._lock:
                self.stats.misses += 1
                self.stats.last_reused = 0
            return make_cache([], 0), 0
        cache = make_cache(layers, length)
        with self._lock:
            self.stats.hits += 1
            self.stats.reused_tokens += length
            self.stats.last_reused = length
        return cache, length

    def store(self, prompt_ids: list[int], cache) -> bool:
        """Keep a copy of `cache`, which holds exactly the KV of `prompt_ids`; False when not kept
        (off, a kind of layer this cache does not handle, too large, or already covered)."""
        if not self.enabled or not prompt_ids:
            return False
        if hasattr(cache, "key_value_pairs"):  # the compact forward's KVCache: views of its filled part
            pairs = cache.key_value_pairs()
        else:
            layers = getattr(cache, "layers", None)
            if not layers or any(type(layer).__name__ != "DynamicLayer" or layer.keys is None for layer in layers):
                return False
            pairs = [(layer.keys, layer.values) for layer in layers]
        if not pairs or any(keys.shape[-2] != len(prompt_ids) for keys, _ in pairs):
            return False
        ids = np.asarray(prompt_ids, dtype=np.int64)
        with self._lock:
            # a kept prompt that starts with this whole prompt already serves it
            if any(len(e.ids) >= len(ids) and _shared_length(e.ids, ids) == len(ids) for e in self._entries.values()):
                return False
        kept = [(keys.detach().clone(), values.detach().clone()) for keys, values in pairs]
        nbytes = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kept)
        if nbytes > self.max_bytes:
            return False
        key = tuple(prompt_ids)
        with self._lock:
            # a kept prompt that this one extends is now redundant
            for old in [k for k, e in self._entries.items() if _shared_length(e.ids, ids) == len(e.ids)]:
                del self._entries[old]
            self._entries[key] = _Entry(ids, kept, nbytes)
            self.stats.stored += 1
            while (
                len(self._entries) > self.max_entries or sum(e.nbytes for e in self._entries.values()) > self.max_bytes
            ):
                self._entries.popitem(last=False)
                self.stats.evicted += 1
        return True


def _shared_length(a: np.ndarray, b: np.ndarray) -> int:
    """How many leading ids two sequences share."""
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


def configured_bytes() -> int:
    """QWEN_PREFIX_CACHE_MB in bytes (default 512 MB; 0 turns the cache off)."""
    raw = load_settings().prefix_cache_mb
    try:
        mb = float(raw) if raw else DEFAULT_MAX_MB
    except ValueError:
        mb = DEFAULT_MAX_MB
    return max(0, int(mb * 2**20))


# one cache per loaded network; it goes when the network does
_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def prefix_cache_for(engine) -> PrefixCache:
    """The prefix cache of a LoadedModel (created on first use, shared by every run on that model)."""
    with _caches_lock:
        cache = _caches.get(engine.model)
        if cache is None:
            cache = _caches[engine.model] = PrefixCache(max_bytes=configured_bytes())
        return cache
