"""The one builder of a small Qwen3 network, for the tiny random-weights model and for training the shipped model.

Both are transformers' Qwen3ForCausalLM with Qwen3's full vocabulary and tied embeddings; they
differ only in their shape and, for the trained model, its rotary base and context length. A
`NetworkShape` says which; `build_qwen3` draws the weights from a seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.tokenizer import END_OF_TEXT, IM_END, MODEL_VOCAB

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class NetworkShape:
    """A small Qwen3's sizes; None leaves transformers' Qwen3Config default in place."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    rope_theta: float | None = None
    max_positions: int | None = None
    bos_token_id: int | None = None


# the tiny model: 2 layers of 64, random weights, for the lessons' mechanics (engine/model/loading.py)
TINY_SHAPE = NetworkShape(hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2, head_dim=16)


def trained_shape(
    hidden: int, intermediate: int, layers: int, heads: int, kv_heads: int, head_dim: int
) -> NetworkShape:
    """The shape `train-builtin` trains: Qwen3's rotary base and a context of 8,192 tokens."""
    return NetworkShape(
        hidden, intermediate, layers, heads, kv_heads, head_dim, 1_000_000.0, 8192, bos_token_id=END_OF_TEXT
    )


def build_qwen3(shape: NetworkShape, seed: int, keep_global_rng: bool = True) -> torch.nn.Module:
    """A freshly initialised Qwen3ForCausalLM of `shape`, its weights drawn from `seed`.

    keep_global_rng: restore torch's global generator afterwards, so the weights are the same whatever else has
    drawn from it (the tiny model); a training run leaves it seeded, as its resumable stream expects."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    optional = {
        "rope_theta": shape.rope_theta,
        "max_position_embeddings": shape.max_positions,
        "bos_token_id": shape.bos_token_id,
    }
    config = Qwen3Config(
        vocab_size=MODEL_VOCAB,
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        head_dim=shape.head_dim,
        tie_word_embeddings=True,
        # the config defaults are None, and then nothing would ever stop a turn
        eos_token_id=IM_END,
        pad_token_id=END_OF_TEXT,
        **{key: value for key, value in optional.items() if value is not None},
    )
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        return Qwen3ForCausalLM(config)
    finally:
        if keep_global_rng:
            torch.random.set_rng_state(state)
