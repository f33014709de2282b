"""An int8 Qwen3 on a CPU whose load maps weights prepared once, the way llama.cpp maps a file already in its format.

The first int8 load of a plain Qwen3 folder (engine/model/lean.py's kind) reads each checkpoint
tensor, rounds it to int8 with a scale per row and lays it out as native_step.c's int8_rows reads
it (engine/model/rows8.py): q|k|v fused into one product and gate|up into another, as the compact
forward runs them, and the embedding in int8 rows that are the lm_head's too when they are tied.
What it computes is written beside the model cache (engine/model/prepared.py); every later load
maps that file and builds the network around it, with nothing converted, packed or copied.

Not covered (raises NotLean, and the caller reads the checkpoint with engine/model/int8_load.py
or transformers): a folder that is not a plain Qwen3, a width that is not a whole number of
32-column chunks, no native step library (no compiler, QWEN_NATIVE_STEP=0), QWEN_FAST_DECODE=0.
"""

from __future__ import annotations

from pathlib import Path

import torch

from .fast_build import adopt, qk_norm_of
from .fast_forward import FastLayer, FastQwen3, SliceOf
from .lean import LeanConfig, NotLean, Rotary, build_lean, check_tensors, parameter_count, read_config
from .native import native_library
from .prepared import Prepared, open_prepared, write_prepared
from .rows8 import Rows8, Rows8Embedding, Rows8Module, fits, interleave, padded_scale, quantize_rows
from .stored import NotPlainLayout, counted_reader, index_checkpoint
from .weights import Progress

SETTING = "int8-rows"
PREPARE_STAGE = "preparing int8 weights once for this folder (kept for later loads)"
_NORMS = ("input_layernorm", "post_attention_layernorm", "self_attn.q_norm", "self_attn.k_norm")


def read_prepared_int8(folder: Path, progress: Progress | None = None):
    """The folder's Qwen3 with int8 products over prepared weights (mapped where this folder was prepared before);
    NotLean where this path does not cover it. The network's `prepared_reason` says where its weights came from."""
    from ..settings import load_settings

    settings = load_settings()
    if not settings.prepared or not settings.fast_decode:
        raise NotLean("QWEN_PREPARED=0" if not settings.prepared else "QWEN_FAST_DECODE=0")
    config = read_config(folder)
    library = native_library()
    if library.lib is None:
        raise NotLean(f"int8 rows need the native step library ({library.reason})")
    d = config.head_dim
    for width in (config.hidden_size, config.num_attention_heads * d, config.intermediate_size):
        if not fits(width):
            raise NotLean(f"a width of {width} is not a whole number of 32-column chunks")
    prepared, why = open_prepared(folder, SETTING)
    if prepared is None:
        if progress is not None:
            progress(0, 0, f"{PREPARE_STAGE}: {why}")
        tensors = prepare(folder, config, progress)
        trouble = write_prepared(folder, SETTING, tensors)
        if trouble:
            prepared = Prepared(tensors, f"prepared in memory: {trouble}")
        else:
            del tensors
            prepared, why = open_prepared(folder, SETTING)
            if prepared is None:
                raise NotLean(f"the weights just prepared could not be read back ({why})")
            prepared.reason = "prepared int8 weights once and mapped them (later loads map them at once)"
    model = assemble(config, prepared.tensors, library.lib)
    model.prepared_reason = prepared.reason
    return model


def prepare(folder: Path, config: LeanConfig, progress: Progress | None = None) -> dict[str, torch.Tensor]:
    """Every tensor the network needs, from the checkpoint: norms in fp32, products in int8 rows (rows8.py)."""
    try:
        stored = index_checkpoint(folder)
    except NotPlainLayout as error:
        raise NotLean(str(error)) from error
    check_tensors(build_lean(config), stored)
    total = sum(
        entry.nbytes for name, entry in stored.items() if name != "lm_head.weight" or not config.tie_word_embeddings
    )
    read = counted_reader(stored, total, PREPARE_STAGE, progress)

    out: dict[str, torch.Tensor] = {}

    def product(name: str, sources: list[str]) -> None:
        # rows quantized each with its own scale, so stacking projections changes no value
        parts = [quantize_rows(read(source)) for source in sources]
        out[f"{name}.int8"] = interleave(torch.cat([ints for ints, _ in parts]))
        out[f"{name}.scale"] = padded_scale(torch.cat([scale for _, scale in parts]))

    with torch.no_grad():
        for i in range(config.num_hidden_layers):
            prefix = f"model.layers.{i}"
            for norm in _NORMS:
                out[f"{prefix}.{norm}.weight"] = read(f"{prefix}.{norm}.weight").float().contiguous()
            product(f"{prefix}.qkv", [f"{prefix}.self_attn.{p}_proj.weight" for p in "qkv"])
            product(f"{prefix}.o", [f"{prefix}.self_attn.o_proj.weight"])
            product(f"{prefix}.gate_up", [f"{prefix}.mlp.gate_proj.weight", f"{prefix}.mlp.up_proj.weight"])
            product(f"{prefix}.down", [f"{prefix}.mlp.down_proj.weight"])
        out["model.norm.weight"] = read("model.norm.weight").float().contiguous()
        product("embed", ["model.embed_tokens.weight"])
        if not config.tie_word_embeddings:
            product("lm_head", ["lm_head.weight"])
    return out


def assemble(config: LeanConfig, tensors: dict[str, torch.Tensor], lib):
    """The lean network (transformers' module names) around prepared tensors, with its compact forward adopted."""
    model = build_lean(config)
    d, h = config.head_dim, config.hidden_size
    q, kv = config.num_attention_heads * d, config.num_key_value_heads * d

    def product(name: str, rows: int, width: int) -> Rows8:
        try:
            return Rows8(tensors[f"{name}.int8"], tensors[f"{name}.scale"], rows, width, lib)
        except (KeyError, ValueError) as error:
            raise NotLean(f"the prepared weights lack or misshape {name} ({error})") from error

    def norm(name: str) -> torch.nn.Parameter:
        value = tensors.get(name)
        if value is None or value.dtype != torch.float32:
            raise NotLean(f"the prepared weights lack {name}")
        return torch.nn.Parameter(value, requires_grad=False)

    layers = []
    for i, block in enumerate(model.model.layers):
        prefix = f"model.layers.{i}"
        attn, mlp = block.self_attn, block.mlp
        for name in _NORMS:
            owner, _, leaf = f"{name}.weight".rpartition(".")
            setattr(block.get_submodule(owner), leaf, norm(f"{prefix}.{name}.weight"))
        qkv = product(f"{prefix}.qkv", q + 2 * kv, h)
        gate_up = product(f"{prefix}.gate_up", 2 * config.intermediate_size, h)
        o, down = product(f"{prefix}.o", h, q), product(f"{prefix}.down", h, config.intermediate_size)
        # the model's own modules stand for parts of the fused products, as after build_fast_forward
        attn.q_proj, attn.k_proj, attn.v_proj = (
            SliceOf(qkv, a, b) for a, b in ((0, q), (q, q + kv), (q + kv, q + 2 * kv))
        )
        attn.o_proj, mlp.down_proj = Rows8Module(o), Rows8Module(down)
        mlp.gate_proj = SliceOf(gate_up, 0, config.intermediate_size)
        mlp.up_proj = SliceOf(gate_up, config.intermediate_size, 2 * config.intermediate_size)
        layers.append(
            FastLayer(
                block.input_layernorm.weight.detach(),
                qkv,
                qk_norm_of(attn, config),
                o,
                block.post_attention_layernorm.weight.detach(),
                gate_up,
                down,
            )
        )
    model.model.norm.weight = norm("model.norm.weight")
    embed = product("embed", config.vocab_size, h)
    model.model.embed_tokens = Rows8Embedding(embed)
    model.lm_head = Rows8Module(embed if config.tie_word_embeddings else product("lm_head", config.vocab_size, h))
    model.model.rotary_emb = Rotary(config)
    left = [name for name, tensor in [*model.named_parameters(), *model.named_buffers()] if tensor.is_meta]
    if left:
        raise NotLean(f"nothing prepared fills {left[:3]}")
    model.stored_parameters = parameter_count(config)
    adopt(
        model,
        FastQwen3(model, layers),
        "a compact Qwen3 forward over prepared int8 rows (engine/model/int8_prepared.py)",
    )
    return model
