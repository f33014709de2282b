"""A Qwen3 causal LM built without transformers: its config read here, its weights read from safetensors.

Importing transformers' Qwen3 modeling code takes about 5 s on a 2-core machine (it pulls in
torch.distributed and torch._dynamo), and its from_pretrained another 0.7 s of regular
expressions, for a network the compact forward (engine/model/fast_forward.py) then runs by
itself. A plain Qwen3 folder on a CPU is read here instead: `LeanQwen3` has transformers'
module names and shapes (model.layers.N.self_attn.q_proj, ...), so the checkpoint's tensors go
where transformers would put them, the int8 reader (engine/model/int8_load.py) can fill it too,
and its forward is the compact forward over its own weights. The numbers are the ones the
compact forward gives over a transformers load of the same folder (tests/test_lean.py).

What this does not cover (another architecture, biases, a rotary scaling, sliding windows,
QWEN_FAST_DECODE=0, a GPU) raises NotLean, and the caller loads through transformers.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path

import torch

from ..core.model_files import read_folder_text

# the largest sizes a config may ask for: a hostile config.json must not build a terabyte of empty modules
_LIMITS = {"vocab_size": 1 << 20, "hidden_size": 1 << 16, "intermediate_size": 1 << 18, "num_hidden_layers": 512}


class NotLean(Exception):
    """The folder is not a plain Qwen3 this module builds: load it through transformers."""


@dataclass(frozen=True)
class LeanConfig:
    """The fields of a Qwen3 config.json that the network and its callers read, under transformers' names."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    max_position_embeddings: int
    tie_word_embeddings: bool
    eos_token_id: int | list | None = None
    pad_token_id: int | None = None
    bos_token_id: int | None = None
    hidden_act: str = "silu"
    attention_bias: bool = False
    model_type: str = "qwen3"

    @property
    def rope_parameters(self) -> dict:
        return {"rope_type": "default", "rope_theta": self.rope_theta}

    @property
    def layer_types(self) -> list[str]:
        return ["full_attention"] * self.num_hidden_layers

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def read_config(folder: Path) -> LeanConfig:
    """The folder's config.json as a LeanConfig; NotLean where it is not a plain Qwen3 (in words, why)."""
    try:
        raw = json.loads(read_folder_text(folder, "config.json"))  # size-checked before it is read
    except (OSError, ValueError) as error:
        raise NotLean(f"config.json could not be read ({type(error).__name__})") from error
    if not isinstance(raw, dict):
        raise NotLean("config.json is not a JSON object")
    if raw.get("model_type") != "qwen3" or raw.get("architectures", ["Qwen3ForCausalLM"]) != ["Qwen3ForCausalLM"]:
        raise NotLean(f"model_type {raw.get('model_type')!r} is not a plain Qwen3ForCausalLM")
    if raw.get("attention_bias") or raw.get("hidden_act", "silu") != "silu" or raw.get("use_sliding_window"):
        raise NotLean("its attention has biases, another activation or a sliding window")
    if any(kind != "full_attention" for kind in raw.get("layer_types") or []):
        raise NotLean("some layers use sliding-window attention")
    rope = raw.get("rope_parameters") or {}
    if raw.get("rope_scaling") or rope.get("rope_type", "default") != "default":
        raise NotLean("its rotary embedding is scaled")
    theta = rope.get("rope_theta", raw.get("rope_theta", 10000.0))
    ints = {}
    for name in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"):
        ints[name] = raw.get(name)
    ints["num_key_value_heads"] = raw.get("num_key_value_heads", ints["num_attention_heads"])
    ints["max_position_embeddings"] = raw.get("max_position_embeddings", 32768)
    for name, value in ints.items():
        if type(value) is not int or not 0 < value <= _LIMITS.get(name, 1 << 24):
            raise NotLean(f"{name} is {value!r}")
    heads, kv_heads = ints["num_attention_heads"], ints["num_key_value_heads"]
    head_dim = raw.get("head_dim") or ints["hidden_size"] // heads
    if type(head_dim) is not int or not 0 < head_dim <= 1024 or head_dim % 2 or heads % kv_heads:
        raise NotLean(f"head_dim {head_dim!r} with {heads} query and {kv_heads} key/value heads")
    eps = raw.get("rms_norm_eps", 1e-6)
    # json reads NaN and Infinity too: each must be a finite number above 0
    if not all(type(x) in (int, float) and math.isfinite(x) and x > 0 for x in (theta, eps)):
        raise NotLean("rope_theta or rms_norm_eps is not a positive number")
    return LeanConfig(
        **ints,
        head_dim=head_dim,
        rms_norm_eps=float(eps),
        rope_theta=float(theta),
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        eos_token_id=raw.get("eos_token_id"),
        pad_token_id=raw.get("pad_token_id"),
        bos_token_id=raw.get("bos_token_id"),
    )


# -- the network: transformers' names and shapes, nothing of its code --------------------------------------
class Norm(torch.nn.Module):
    """An RMSNorm's weight (the compact forward does the arithmetic)."""

    def __init__(self, width: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(width), requires_grad=False)


class Attention(torch.nn.Module):
    def __init__(self, c: LeanConfig):
        super().__init__()
        d = c.head_dim
        self.q_proj = torch.nn.Linear(c.hidden_size, c.num_attention_heads * d, bias=False)
        self.k_proj = torch.nn.Linear(c.hidden_size, c.num_key_value_heads * d, bias=False)
        self.v_proj = torch.nn.Linear(c.hidden_size, c.num_key_value_heads * d, bias=False)
        self.o_proj = torch.nn.Linear(c.num_attention_heads * d, c.hidden_size, bias=False)
        self.q_norm, self.k_norm = Norm(d), Norm(d)


class MLP(torch.nn.Module):
    def __init__(self, c: LeanConfig):
        super().__init__()
        self.gate_proj = torch.nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = torch.nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = torch.nn.Linear(c.intermediate_size, c.hidden_size, bias=False)


class Block(torch.nn.Module):
    def __init__(self, c: LeanConfig):
        super().__init__()
        self.self_attn, self.mlp = Attention(c), MLP(c)
        self.input_layernorm, self.post_attention_layernorm = Norm(c.hidden_size), Norm(c.hidden_size)


class Rotary(torch.nn.Module):
    """Qwen3's default rotary frequencies, computed as transformers computes them (float32, from the config)."""

    def __init__(self, config: LeanConfig):
        super().__init__()
        steps = torch.arange(0, config.head_dim, 2, dtype=torch.float, device="cpu") / config.head_dim
        self.register_buffer("inv_freq", 1.0 / (config.rope_theta**steps), persistent=False)
        self.attention_scaling = 1.0


class Body(torch.nn.Module):
    def __init__(self, c: LeanConfig):
        super().__init__()
        # an empty weight given: Embedding's own random start on the meta device would import torch._dynamo (3 s)
        empty = torch.empty(c.vocab_size, c.hidden_size)
        self.embed_tokens = torch.nn.Embedding(c.vocab_size, c.hidden_size, _weight=empty, _freeze=True)
        self.layers = torch.nn.ModuleList(Block(c) for _ in range(c.num_hidden_layers))
        self.norm = Norm(c.hidden_size)
        self.rotary_emb = Rotary(c)


class LeanQwen3(torch.nn.Module):
    """A Qwen3ForCausalLM's modules under its names; called as transformers' model is called by this engine."""

    lean = True  # engine/model/fast_forward.py covers it without importing transformers

    def __init__(self, config: LeanConfig):
        super().__init__()
        self.config = config
        self.model = Body(config)
        self.lm_head = torch.nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    @property
    def device(self) -> torch.device:
        return self.model.norm.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.norm.weight.dtype

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def set_input_embeddings(self, module) -> None:
        self.model.embed_tokens = module

    def get_output_embeddings(self):
        return self.lm_head

    def forward(self, input_ids: torch.Tensor, cache=None, logits_to_keep: int = 0, **_):
        """Logits of the last `logits_to_keep` positions (0: all) through the compact forward; `cache` is its
        KVCache, or None for a pass on a throwaway one (transformers' use_cache=False)."""
        from .fast_build import fast_forward_of, forward_reason_of

        fast = fast_forward_of(self)
        if fast is None:
            raise RuntimeError(f"this network runs only through the compact forward ({forward_reason_of(self)})")
        return fast(input_ids, cache=cache, logits_to_keep=logits_to_keep)


def build_lean(config: LeanConfig, device: str = "meta") -> LeanQwen3:
    """The network with no weights yet (on torch's meta device: nothing allocated) or random ones on `device`."""
    with torch.device(device):
        return LeanQwen3(config).eval()


def check_tensors(model: LeanQwen3, stored: dict) -> None:
    """NotLean unless the checkpoint's tensors (engine/model/stored.py's index) are the network's, name for name
    and shape for shape (a tied lm_head may be absent)."""
    expected = dict(model.named_parameters(remove_duplicate=False))
    optional = {"lm_head.weight"} if model.config.tie_word_embeddings else set()
    missing, extra = set(expected) - optional - set(stored), set(stored) - set(expected)
    if missing or extra:
        named = sorted(missing)[:2] + sorted(extra)[:2]
        raise NotLean(f"its tensors differ from a Qwen3's ({', '.join(named)})")
    for name, parameter in expected.items():
        entry = stored.get(name)
        if entry is not None and entry.shape != tuple(parameter.shape):
            raise NotLean(f"{name} is not shaped {tuple(parameter.shape)}")


def parameter_count(config: LeanConfig) -> int:
    """The network's parameters, a tied embedding counted once (as transformers' model.parameters() counts)."""
    h, d = config.hidden_size, config.head_dim
    q, kv = config.num_attention_heads * d, config.num_key_value_heads * d
    layer = h * (q + 2 * kv) + q * h + 3 * h * config.intermediate_size + 2 * h + 2 * d
    head = 0 if config.tie_word_embeddings else config.vocab_size * h
    return config.vocab_size * h + head + config.num_hidden_layers * layer + h


def read_lean(folder: Path, dtype: torch.dtype = torch.float32) -> LeanQwen3:
    """The folder's Qwen3 in `dtype` on the CPU, each tensor read from its safetensors file; NotLean where the folder
    is not a plain Qwen3 or its tensors do not match the network's names and shapes."""
    from .stored import NotPlainLayout, index_checkpoint, read_tensor

    config = read_config(folder)
    try:
        stored = index_checkpoint(folder)
    except NotPlainLayout as error:
        raise NotLean(str(error)) from error
    model = build_lean(config)
    check_tensors(model, stored)
    with torch.no_grad():
        for name, _ in model.named_parameters():
            entry = stored[name]
            # plain reads into memory of the process's own, then the load's dtype (a copy only when it differs)
            value = read_tensor(entry).to(dtype)
            owner, _, leaf = name.rpartition(".")
            setattr(model.get_submodule(owner), leaf, torch.nn.Parameter(value, requires_grad=False))
        if config.tie_word_embeddings:
            model.lm_head.weight = model.model.embed_tokens.weight
        model.model.rotary_emb = Rotary(config)
    return model.eval()
