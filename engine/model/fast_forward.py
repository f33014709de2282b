"""A compact Qwen3 forward pass for a CPU: the loaded model's own weights, half the eager ops.

transformers' Qwen3 runs 63 computing ops per layer and decode step (each norm is five, the
rotary embedding a dozen, the KV cache a concatenation that copies the layer's keys and values
at every token) and one Linear call per projection (seven per layer; under int8 each quantizes
its input again). On a CPU, at one row per step, their dispatch and copies add up to a good part
of a step. This module runs the same network with 33 computing ops and 4 products per layer
(counted with torch's profiler on the tiny model), as gpt-fast's Llama and llama.cpp's graph do:

    embed -> per layer: rms_norm -> one q|k|v product -> rms_norm of q and k heads together
          -> rotary from a precomputed table -> keys and values written in place into a
          preallocated cache (bf16 for int8 weights where it pays: engine/model/attention.py)
          -> attention (the query heads of one key/value head side by side, so grouped-query
          attention needs no copy of the keys) -> o product
          -> residual -> rms_norm -> one gate|up product -> silu(gate) * up -> down -> residual
    -> final norm of the kept rows -> the model's own lm_head

At one token a step (the decode loop's every step after the prompt), a model with fp32
activations (fp32 or int8 weights) runs the same network through `native_step`: the products
stay torch's, and between them the norms, rotary embedding, cache write, attention and the MLP's
gate are four C calls a layer (engine/model/native_step.c, compiled at first use by
engine/model/native.py) in place of about forty torch ops; QWEN_NATIVE_STEP=0 keeps the ops.

The fused products hold exactly the loaded weights: float weights are concatenated (and the
model's own Linear layers then point into the fused tensor, so nothing is stored twice); int8
weights (engine/model/quant.py) keep their int8 values and their per-tensor scales, written as
one scale per output row of the fused tensor, so each product gives the numbers the separate
ones gave (the model's own layers become slices of the fused product, and the separate int8
copies are freed). The norms are Qwen3RMSNorm's own arithmetic; what differs from transformers'
forward is float rounding only (attention's kernel, the fused products' summation order):
tests/test_fast_forward.py compares the two, fp32, bf16 and int8.

Built over a loaded model's weights by engine/model/fast_build.py, which says what it covers; used by
the decode loop (engine/model/decode.py) and the one-step peeks (engine/model/peek.py) on a CPU for
Qwen3ForCausalLM; anything else (another architecture, a GPU, QWEN_FAST_DECODE=0,
read when the model is first run) keeps transformers' forward.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .attention import attend, cache_dtype
from .native import attend_layer, native_library

# cache rows are allocated in steps of this many tokens (a run asks for its prompt plus its new tokens)
_CACHE_STEP = 256
_ROPE_START = 4096  # rotary table rows built at first; doubled when a longer sequence comes


@dataclass
class FastOutput:
    """What a forward pass returns, shaped as transformers' output where the callers read it."""

    logits: torch.Tensor  # (1, kept rows, vocabulary)


class Product:
    """One projection: x @ W.T, with W float (F.linear) or int8 (torch's dynamic quantized linear)."""

    def __init__(self, weight: torch.Tensor | None = None, packed=None, reduce_range: bool = True):
        self.weight, self.packed, self.reduce_range = weight, packed, reduce_range

    @property
    def int8(self) -> bool:
        return self.packed is not None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed is not None:
            return torch.ops.quantized.linear_dynamic(x, self.packed, self.reduce_range)
        return F.linear(x, self.weight)


class SliceOf(torch.nn.Module):
    """A part of a fused int8 product, standing in for the Linear it replaced in transformers' modules,
    so the model's own forward still runs (computing the whole fused product, then its rows)."""

    def __init__(self, product: Product, start: int, end: int):
        super().__init__()
        self.product, self.start, self.end = product, start, end

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.product(x)[..., self.start : self.end]


@dataclass
class FastLayer:
    """One decoder layer's weights, as the compact forward uses them."""

    input_norm: torch.Tensor
    qkv: Product  # rows: query heads, key heads, value heads
    qk_norm: torch.Tensor  # (query heads + key heads, head_dim): q_norm's weight per query head, k_norm's per key head
    o: Product
    post_norm: torch.Tensor
    gate_up: Product  # rows: gate, then up
    down: Product


class KVCache:
    """Every layer's keys and values in one preallocated tensor, written in place as a run goes.

    Shape (layers, 2, key/value heads, capacity, head_dim); `length` tokens are filled. It grows
    (one copy) when a run outlives its reservation. `key_value_pairs()` gives views of the filled
    part per layer, which the prefix cache copies (engine/model/prefix_cache.py)."""

    def __init__(self, layers: int, heads: int, head_dim: int, dtype: torch.dtype, capacity: int):
        self.data = torch.empty(layers, 2, heads, _rounded(capacity), head_dim, dtype=dtype)
        self.length = 0

    def get_seq_length(self) -> int:
        return self.length

    def reserve(self, total: int) -> None:
        """Room for `total` tokens in all."""
        if total > self.data.shape[3]:
            grown = torch.empty(
                *self.data.shape[:3],
                _rounded(max(total, 2 * self.data.shape[3])),
                self.data.shape[4],
                dtype=self.data.dtype,
            )
            grown[:, :, :, : self.length] = self.data[:, :, :, : self.length]
            self.data = grown

    def key_value_pairs(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per layer, (keys, values) of the filled part, shaped (1, heads, length, head_dim): views, not copies."""
        return [
            (layer[0, :, : self.length].unsqueeze(0), layer[1, :, : self.length].unsqueeze(0)) for layer in self.data
        ]


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    """Qwen3RMSNorm's arithmetic in its order (so the same numbers to the bit), in 5 or 6 ops
    where torch's composite rms_norm dispatches about 11 on a CPU."""
    h = x if x.dtype == torch.float32 else x.float()
    y = h * h.pow(2).mean(-1, keepdim=True).add_(eps).rsqrt_()
    if y.dtype != x.dtype:
        y = y.to(x.dtype)
    return y if weight is None else weight * y


def _rounded(tokens: int) -> int:
    return max(_CACHE_STEP, -(-tokens // _CACHE_STEP) * _CACHE_STEP)


class FastQwen3:
    """The compact forward of one loaded Qwen3ForCausalLM; call it as the model is called by the decode loop."""

    def __init__(self, model, layers: list[FastLayer]):
        config = model.config
        self.model = model
        self.layers = layers
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.eps = config.rms_norm_eps
        self.scaling = self.head_dim**-0.5
        embed = model.model.embed_tokens
        # a prepared int8 model's embedding is its int8 lm_head's rows (engine/model/rows8.py): looked up by `take`
        self.embed_rows = getattr(getattr(embed, "product", None), "take", None)
        # else a weight, 16-bit under int8 from a 16-bit checkpoint: rows widened on lookup
        self.embedding = None if self.embed_rows is not None else embed.weight
        self.final_norm = model.model.norm.weight
        self.lm_head = model.lm_head
        self.dtype = self.final_norm.dtype
        rotary = model.model.rotary_emb
        self.inv_freq = rotary.inv_freq.detach().float().clone()
        self.rope_scaling = float(rotary.attention_scaling)
        self._rope = (torch.empty(0), torch.empty(0))  # (cos, sin), replaced whole so a reader never mixes two tables
        self._rope_lock = threading.Lock()
        self.rotary_rows(_ROPE_START)
        # a decode step's small operations in C where they can run there (fp32 activations; engine/model/native.py)
        self.native, why = (
            None,
            f"the model's activations are {str(self.dtype).removeprefix('torch.')}; the C step reads fp32",
        )
        if self.dtype == torch.float32:
            built = native_library()
            self.native, why = built.lib, built.reason
        self.native_reason = why if self.native is not None else f"torch ops throughout ({why})"
        if self.native is not None and layers and not isinstance(layers[0].qkv, Product):
            # prepared int8 weights (engine/model/rows8.py): their products run in the same C library
            built_where = why[why.find(" (") :] if " (" in why else ""
            self.native_reason = f"norms, attention, the MLP's gate and the int8 products in C{built_where}"

    # -- tables and caches --------------------------------------------------------------------
    @functools.cached_property
    def cache_choice(self):
        """The key/value cache's dtype: the model's, or bf16 for int8 weights where a timing shows it pays. Chosen at
        first use, so at the thread count the load settles on (a prepared network is built before it sets it)."""
        int8 = bool(self.layers) and self.layers[0].qkv.int8
        return cache_dtype(
            self.dtype,
            int8,
            len(self.layers),
            self.kv_heads,
            self.heads // self.kv_heads,
            self.head_dim,
            native=self.native is not None,
        )

    def rotary_rows(self, positions: int) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sign-folded sin for positions 0 .. at least `positions` - 1, as transformers computes them.

        sin's first half is negated, so rotate_half(x) * sin = roll(x, half) * folded_sin, exactly."""
        table = self._rope
        if table[0].shape[0] >= positions:
            return table
        with self._rope_lock:
            if self._rope[0].shape[0] >= positions:
                return self._rope
            rows = max(positions, 2 * self._rope[0].shape[0])
            # the same products as Qwen3RotaryEmbedding: position (as float) times inverse frequency
            freqs = torch.arange(rows, dtype=torch.float32)[:, None] * self.inv_freq[None, :]
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = (emb.cos() * self.rope_scaling).to(self.dtype)
            sin = (emb.sin() * self.rope_scaling).to(self.dtype)
            half = self.head_dim // 2
            sin = torch.cat((-sin[:, :half], sin[:, half:]), dim=-1)
            self._rope = (cos, sin)
        return cos, sin

    def new_cache(self, capacity: int, layers=None, length: int = 0) -> KVCache:
        """A cache with room for `capacity` tokens; `layers` ((keys, values) per layer) and `length`
        start it with a copy of their first `length` tokens (a prefix kept by an earlier run)."""
        cache = KVCache(len(self.layers), self.kv_heads, self.head_dim, self.cache_choice.dtype, max(capacity, length))
        if layers and length:
            for slot, (keys, values) in zip(cache.data, layers, strict=True):
                slot[0, :, :length] = keys[0, :, :length]
                slot[1, :, :length] = values[0, :, :length]
            cache.length = length
        return cache

    # -- the forward pass ------------------------------------------------------------------------
    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """The rows of `input_ids` in the activations' dtype."""
        if self.embed_rows is not None:
            return self.embed_rows(input_ids).to(self.dtype)
        return F.embedding(input_ids, self.embedding).to(self.dtype)

    def __call__(
        self, input_ids: torch.Tensor, cache: KVCache | None = None, logits_to_keep: int = 0, **_
    ) -> FastOutput:
        """Logits of the last `logits_to_keep` positions (0: all) after reading `input_ids` (1, T) on `cache`
        (a KVCache from new_cache; None: a throwaway one for this pass alone)."""
        if input_ids.dim() != 2 or input_ids.shape[0] != 1:
            raise ValueError(
                f"the compact forward reads one sequence at a time (shape (1, T)), not {tuple(input_ids.shape)}"
            )
        if cache is None:
            cache = self.new_cache(input_ids.shape[1])
        if not isinstance(cache, KVCache):
            raise TypeError(
                f"the compact forward needs its own KVCache (FastQwen3.new_cache), not {type(cache).__name__}"
            )
        # inference mode skips autograd's per-op bookkeeping; the logits leave it as an ordinary
        # tensor (a copy), since the decode loop writes into them
        with torch.inference_mode():
            logits = self.forward(input_ids, cache, logits_to_keep)
        return FastOutput(logits.clone())

    def forward(self, input_ids: torch.Tensor, cache: KVCache, logits_to_keep: int) -> torch.Tensor:
        """The pass itself (in inference mode): logits as (1, kept rows, vocabulary)."""
        count = input_ids.shape[1]
        if count == 1 and self.native is not None:
            return self.native_step(input_ids, cache)
        past = cache.length
        cache.reserve(past + count)
        cos, sin = self.rotary_rows(past + count)
        cos, sin = cos[past : past + count, None, :], sin[past : past + count, None, :]
        heads, kv_heads, d = self.heads, self.kv_heads, self.head_dim
        group = heads // kv_heads
        q_width, k_width = heads * d, kv_heads * d
        mask = None
        if count > 1:
            # query row (r, t) of a key/value head's group sees keys 0 .. past + t
            seen = torch.arange(past + count)[None, :] <= (past + torch.arange(count))[:, None]
            mask = seen.repeat(group, 1)
        hidden = self.embed(input_ids)
        total = past + count
        for index, layer in enumerate(self.layers):
            x = rms_norm(hidden, layer.input_norm, self.eps)
            qkv = layer.qkv(x)
            # q and k heads normed together, each head by its own weight, then rotated
            qk = qkv[..., : q_width + k_width].view(1, count, heads + kv_heads, d)
            qk = layer.qk_norm * rms_norm(qk, None, self.eps)
            qk = qk * cos + qk.roll(d // 2, dims=-1) * sin
            slot = cache.data[index]
            slot[0, :, past:total] = qk[0, :, heads:].transpose(0, 1)
            slot[1, :, past:total] = qkv[0, :, q_width + k_width :].view(count, kv_heads, d).transpose(0, 1)
            # the query heads of one key/value head side by side: (kv heads, group * T, d), rows (r, t)
            q = qk[0, :, :heads].transpose(0, 1).reshape(kv_heads, group * count, d)
            attended = attend(q, slot[0, :, :total], slot[1, :, :total], self.scaling, mask)
            attended = attended.view(kv_heads, group, count, d).permute(2, 0, 1, 3).reshape(1, count, q_width)
            hidden = hidden + layer.o(attended)
            x = rms_norm(hidden, layer.post_norm, self.eps)
            gate_up = layer.gate_up(x)
            width = gate_up.shape[-1] // 2
            hidden = hidden + layer.down(F.silu(gate_up[..., :width]) * gate_up[..., width:])
        cache.length = total
        if logits_to_keep:
            hidden = hidden[:, -logits_to_keep:]
        hidden = rms_norm(hidden, self.final_norm, self.eps)
        return self.lm_head(hidden)

    def native_step(self, input_ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """One token's pass with its small operations in C (engine/model/native_step.c): the same network
        as `forward`, the products still torch's, and per layer four C calls in place of about forty ops."""
        lib = self.native
        past = cache.length
        cache.reserve(past + 1)
        cos, sin = self.rotary_rows(past + 1)
        heads, d = self.heads, self.head_dim
        row_bytes = d * cos.element_size()
        cos_row, sin_row = cos.data_ptr() + past * row_bytes, sin.data_ptr() + past * row_bytes
        threads, eps = torch.get_num_threads(), self.eps
        hidden = self.embed(input_ids).contiguous()
        x = torch.empty_like(hidden)
        attended = torch.empty(1, 1, heads * d)
        delta = None  # what the last product adds to the residual stream, before the next norm
        for index, layer in enumerate(self.layers):
            lib.add_norm(hidden.data_ptr(), delta, layer.input_norm.data_ptr(), x.data_ptr(), hidden.shape[-1], eps)
            qkv = layer.qkv(x)
            attend_layer(
                lib,
                qkv,
                layer.qk_norm,
                cos_row,
                sin_row,
                cache.data,
                index,
                past,
                heads,
                eps,
                self.scaling,
                attended,
                threads,
            )
            o = layer.o(attended)
            lib.add_norm(
                hidden.data_ptr(), o.data_ptr(), layer.post_norm.data_ptr(), x.data_ptr(), hidden.shape[-1], eps
            )
            gate_up = layer.gate_up(x)
            width = gate_up.shape[-1] // 2
            act = torch.empty(1, 1, width)
            lib.silu_mul(gate_up.data_ptr(), act.data_ptr(), width)
            down = layer.down(act)
            delta = down.data_ptr()
        lib.add_norm(hidden.data_ptr(), delta, self.final_norm.data_ptr(), x.data_ptr(), hidden.shape[-1], eps)
        cache.length = past + 1
        return self.lm_head(x)
