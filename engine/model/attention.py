"""A decode step's attention on a CPU, and the dtype its key/value cache is kept in, chosen by a timing.

At one new token a step, attention reads every cached key and value of every layer: at 264
tokens of Qwen3-0.6B, 60 MB of fp32 a step, a sixth of the int8 weights' bytes, and on a
2-core machine 8 to 14 ms of a 55 ms step. llama.cpp keeps its cache in 16-bit floats; so does
this where it pays: for a model whose weights are int8 (already rounded far more coarsely than
bf16 rounds a key), `cache_dtype` times one step's attention over a cache of the model's shape
in fp32 (two batched products, the softmax in fp32) and in bf16 (torch's fused kernel, which
widens the keys block by block), and keeps the faster. Where the decode step runs in C
(engine/model/native_step.c, which widens bf16 keys as it reads them), that step's attention
is what is timed. A float model keeps its own dtype, so
its numbers stay transformers' own. QWEN_KV_DTYPE=bfloat16|float32 overrides (engine/settings.py).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..errors import BadInput
from ..settings import load_settings
from .native import attend_layer, native_library

KV_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
# positions in the timed cache: about a lesson's prompt and its reply
_PROBE_TOKENS = 320


@dataclass(frozen=True)
class CacheChoice:
    """The key/value cache's dtype, and why (step times in milliseconds, the fastest of each)."""

    dtype: torch.dtype
    reason: str
    step_ms: dict  # {"float32": ms, "bfloat16": ms}: empty when the setting or the weights decided


def attend(
    q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, scale: float, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Attention of `q` (kv heads, rows, d) over one layer's `keys` and `values` (kv heads, length, d), as (1, kv heads, rows, d).

    A step's rows with no mask (they see every key) take two plain products at fp32, with the
    softmax in fp32 as transformers' eager attention takes it (measured at 265 keys: a quarter
    faster than torch's fused kernel while the keys are in the CPU's cache, as fast when they come
    from memory); a bf16 cache, and a prompt's rows with their causal `mask`, take the fused
    kernel, q in the cache's dtype."""
    if mask is None and keys.dtype == torch.float32 and q.dtype == torch.float32:
        scores = torch.bmm(q, keys.transpose(1, 2)).mul_(scale)
        weights = scores.softmax(-1, dtype=torch.float32)
        return torch.bmm(weights, values).unsqueeze(0)
    out = F.scaled_dot_product_attention(
        q.unsqueeze(0).to(keys.dtype), keys.unsqueeze(0), values.unsqueeze(0), attn_mask=mask, scale=scale
    )
    return out.to(q.dtype)


def time_step_attention(
    layers: int, kv_heads: int, group: int, head_dim: int, dtype: torch.dtype, repeats: int = 3, native=None
) -> float:
    """The fastest of `repeats` timings, in seconds, of one decode step's attention over `layers` layers of a cache in `dtype`:
    torch's (`attend`), or the C step's (`native`, the library of engine/model/native.py) where given.

    The cache is the model's own size, larger than a CPU's last-level cache for any real model,
    so the keys come from memory as in a real step, not from a warm cache."""
    generator = torch.Generator().manual_seed(0)
    cache = torch.randn(layers, 2, kv_heads, _PROBE_TOKENS, head_dim, generator=generator).to(dtype)
    q = torch.randn(kv_heads, group, head_dim, generator=generator)
    scale = head_dim**-0.5
    step = _native_step(native, cache, q, scale) if native is not None else _torch_step(cache, q, scale)
    times = []
    with torch.inference_mode():
        step(0)  # the first call pays for kernel selection
        for _ in range(repeats):
            started = time.perf_counter()
            for index in range(layers):
                step(index)
            times.append(time.perf_counter() - started)
    return min(times)


def _torch_step(cache: torch.Tensor, q: torch.Tensor, scale: float):
    """One layer's torch attention over `cache`, as a call of the layer's index."""
    return lambda index: attend(q, cache[index, 0], cache[index, 1], scale)


def _native_step(lib, cache: torch.Tensor, q: torch.Tensor, scale: float):
    """One layer's C attention step over `cache`, as a call of the layer's index (its token at the last position)."""
    _, _, kv_heads, capacity, head_dim = cache.shape
    heads = q.numel() // head_dim
    qkv = torch.cat([q.reshape(-1), torch.ones(2 * kv_heads * head_dim)])
    norm, rope = torch.ones(heads + kv_heads, head_dim), torch.ones(head_dim)
    out = torch.empty(heads * head_dim)
    threads = torch.get_num_threads()
    return lambda index: attend_layer(
        lib, qkv, norm, rope.data_ptr(), rope.data_ptr(), cache, index, capacity - 1, heads, 1e-6, scale, out, threads
    )


@functools.lru_cache(maxsize=8)
def _measured_choice(layers: int, kv_heads: int, group: int, head_dim: int, threads: int, native: bool) -> CacheChoice:
    lib = native_library().lib if native else None
    fp32 = time_step_attention(layers, kv_heads, group, head_dim, torch.float32, native=lib)
    bf16 = time_step_attention(layers, kv_heads, group, head_dim, torch.bfloat16, native=lib)
    timings = {"float32": round(fp32 * 1e3, 3), "bfloat16": round(bf16 * 1e3, 3)}
    if bf16 < fp32:
        return CacheChoice(
            torch.bfloat16,
            f"a step's attention took {bf16 * 1e3:.1f} ms over bf16 keys and values, "
            f"{fp32 * 1e3:.1f} ms over fp32: kept in bf16",
            timings,
        )
    return CacheChoice(
        torch.float32,
        f"a step's attention took {fp32 * 1e3:.1f} ms over fp32 keys and values, "
        f"{bf16 * 1e3:.1f} ms over bf16: kept in fp32",
        timings,
    )


def cache_dtype(
    model_dtype: torch.dtype,
    int8_weights: bool,
    layers: int,
    kv_heads: int,
    group: int,
    head_dim: int,
    native: bool = False,
) -> CacheChoice:
    """The dtype a model's key/value cache is kept in: QWEN_KV_DTYPE when set; the model's own dtype
    unless its weights are int8 and fp32; else the faster of fp32 and bf16 at this thread count
    (timing the C step's attention where `native`, the decode steps then running in C)."""
    requested = load_settings().kv_dtype
    if requested not in ("auto", *KV_DTYPES):
        raise BadInput(f"QWEN_KV_DTYPE must be auto, float32 or bfloat16, not {requested!r}")
    if requested != "auto":
        return CacheChoice(KV_DTYPES[requested], f"QWEN_KV_DTYPE={requested}", {})
    if not int8_weights or model_dtype != torch.float32:
        return CacheChoice(
            model_dtype, f"the cache keeps the model's own dtype ({str(model_dtype).removeprefix('torch.')})", {}
        )
    from .remembered import remembered

    threads = torch.get_num_threads()
    shape = f"kv cache: {layers} layers, {kv_heads}x{group} heads of {head_dim}, {threads} threads, native {native}"

    def encode(choice: CacheChoice) -> dict:
        return {"dtype": str(choice.dtype).removeprefix("torch."), "reason": choice.reason, "step_ms": choice.step_ms}

    def decode(entry: dict, when: str) -> CacheChoice | None:
        if entry["dtype"] not in KV_DTYPES or not isinstance(entry["step_ms"], dict):
            return None
        return CacheChoice(KV_DTYPES[entry["dtype"]], entry["reason"] + when, entry["step_ms"])

    # timed once per machine and model shape (a second or two at Qwen3-0.6B's), then remembered
    measure = functools.partial(_measured_choice, layers, kv_heads, group, head_dim, threads, native)
    return remembered("kv_cache.json", shape, measure, encode, decode)
