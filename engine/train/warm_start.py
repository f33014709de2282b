"""Warm starts: a new run begins from a saved model's weights (`train-builtin --init-from assets/builtin-model`).

A checkpoint lives on the machine that trained it, not in the repository; a new machine starts
without one. Starting from the shipped weights (with a fresh optimizer and a short warm-up) keeps
what was shipped, so the progress of earlier runs is never lost. Only safetensors are read: a
pickle from a folder is never loaded.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..errors import BadInput

# the network's shape, as config.json names it, and the TrainConfig field each sets
SHAPE = {
    "hidden_size": "hidden",
    "num_hidden_layers": "layers",
    "intermediate_size": "intermediate",
    "num_attention_heads": "heads",
    "num_key_value_heads": "kv_heads",
    "head_dim": "head_dim",
}
CONFIG_LIMIT = 1_000_000  # bytes: a model's config.json is a few kilobytes
WEIGHTS_LIMIT = 2_000_000_000  # bytes: the shipped model is 41 MB; a folder this large is not one to warm-start from


def saved_shape(folder: Path) -> dict:
    """The TrainConfig fields a saved model's config.json fixes, checked before anything is trained."""
    config_file = folder / "config.json"
    weights = folder / "model.safetensors"
    for path, limit in ((config_file, CONFIG_LIMIT), (weights, WEIGHTS_LIMIT)):
        if not path.is_file():
            raise BadInput(f"--init-from {folder}: no {path.name} there; give a folder train-builtin wrote")
        if path.stat().st_size > limit:
            raise BadInput(f"--init-from {folder}: {path.name} is over {limit:,} bytes")
    try:
        saved = json.loads(config_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadInput(f"--init-from {folder}: config.json is not JSON ({error})") from None
    if saved.get("architectures") != ["Qwen3ForCausalLM"] or not saved.get("tie_word_embeddings"):
        raise BadInput(f"--init-from {folder}: not a small Qwen3 with a tied embedding, as train-builtin writes")
    shape = {}
    for key, field_name in SHAPE.items():
        value = saved.get(key)
        if not isinstance(value, int) or not 1 <= value <= 65_536:
            raise BadInput(f"--init-from {folder}: config.json's {key} is {value!r}, not a size")
        shape[field_name] = value
    return shape


def load_saved_weights(network: torch.nn.Module, folder: Path) -> None:
    """Copy a saved model's weights into `network` (built to its shape), as float32."""
    from safetensors.torch import load_file

    state = load_file(str(folder / "model.safetensors"))
    # the output layer is tied to the embedding: a saved model holds one of the two
    state.pop("lm_head.weight", None)
    missing, unexpected = network.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
    missing = [name for name in missing if name != "lm_head.weight"]
    if missing or unexpected:
        raise BadInput(
            f"--init-from {folder}: its weights do not fit the network (missing {missing[:3]}, extra {unexpected[:3]})"
        )
    network.tie_weights()
