"""An int8 model read from its safetensors files one tensor at a time, never the whole checkpoint in memory.

transformers' from_pretrained builds the whole model in the checkpoint's dtype (and maps its
files) before engine/model/quant.py quantizes it: for Qwen3-1.7B a 6.4 GB peak for a model
that then holds 3.1 GB. Here the model is built without storage (torch's meta device) and
each tensor is read from its file with plain reads (no mapping: the page cache is not the
process's memory) into the module that holds it. A Linear's weight is quantized as it is read:
its range over slices of rows first, then each slice quantized, so not even one large matrix
exists in fp32; the norms are widened to fp32 and the embedding keeps its 16 bits (its rows
widened as they are looked up, engine/model/embedding.py). The int8 values and scales are
those quantize_dynamic gives an fp32 load, bit for bit (tests/test_int8_load.py).

A checkpoint of any other layout (a tensor the model lacks or has not, a dtype other than F32,
BF16 and F16, a module with buffers other than the rotary table) is not read here: the caller
loads it through transformers as before.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import torch

from .stored import NotPlainLayout, counted_reader, index_checkpoint
from .weights import Progress

# the load's progress line while it reads (a bar of bytes read)
READ_STAGE = "reading the weights into int8, one tensor at a time"


def read_int8_model(folder: Path, progress: Progress | None = None):
    """The folder's causal LM with int8 Linears, fp32 norms and its embedding in its stored dtype, read tensor by
    tensor (`progress` hears the bytes read so far of all it reads); raises NotPlainLayout for a checkpoint this
    reader does not take (load it through transformers)."""
    from .embedding import WideningEmbedding
    from .quant import quantize_weight, select_quantized_engine

    stored = index_checkpoint(folder)
    model = lean_skeleton(folder)
    if model is None:
        from transformers import AutoConfig, AutoModelForCausalLM

        try:
            config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
            with torch.device("meta"):
                model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        except Exception as error:
            # transformers' own load says it better (an unknown model type, a config it cannot read)
            raise NotPlainLayout(f"its config builds no model here: {type(error).__name__}") from error
    config = model.config
    model.eval()
    embed, lm_head = model.get_input_embeddings(), model.get_output_embeddings()
    embed_name = next(name for name, module in model.named_modules() if module is embed) + ".weight"
    lm_head_name = next((name for name, module in model.named_modules() if module is lm_head), None)
    tied = lm_head is not None and bool(getattr(config, "tie_word_embeddings", False))
    expected = {name for name, _ in model.named_parameters(remove_duplicate=False)}
    optional = {f"{lm_head_name}.weight"} if tied else set()
    missing, extra = expected - optional - set(stored), set(stored) - expected
    if missing:
        raise NotPlainLayout(f"the checkpoint lacks {', '.join(sorted(missing)[:3])}")
    if extra:
        raise NotPlainLayout(f"the checkpoint holds {', '.join(sorted(extra)[:3])}, which the model has not")
    if type(embed) is not torch.nn.Embedding:
        raise NotPlainLayout(f"an input embedding of type {type(embed).__name__}")
    read = counted_reader(stored, sum(stored[name].nbytes for name in expected - optional), READ_STAGE, progress)

    with warnings.catch_warnings():
        # torch >= 2.10 says eager quantization moves to torchao; the kernels are the same and still shipped
        warnings.simplefilter("ignore")
        select_quantized_engine()
        embedding = read(embed_name)
        for parent_name, parent in list(model.named_modules()):
            prefix = f"{parent_name}." if parent_name else ""
            for name, child in list(parent.named_children()):
                full = prefix + name
                if type(child) is torch.nn.Linear:
                    weight = embedding if tied and child is lm_head else read(f"{full}.weight")
                    bias = read(f"{full}.bias") if child.bias is not None else None
                    setattr(parent, name, quantize_weight(weight, bias))
                elif child is embed:
                    embed.weight = torch.nn.Parameter(embedding, requires_grad=False)
                else:
                    for key, _ in list(child.named_parameters(recurse=False)):
                        value = read(f"{full}.{key}").float()
                        setattr(child, key, torch.nn.Parameter(value, requires_grad=False))
    if embedding.dtype != torch.float32:
        model.set_input_embeddings(WideningEmbedding(embed))
    rebuild_rotary_tables(model, config)
    left = [name for name, tensor in [*model.named_parameters(), *model.named_buffers()] if tensor.is_meta]
    if left:
        raise NotPlainLayout(f"nothing in the checkpoint fills {left[:3]}")
    return model


def lean_skeleton(folder: Path):
    """A plain Qwen3's network without weights, built without transformers (engine/model/lean.py), where the
    compact forward will run it; None: build it through transformers."""
    from ..settings import load_settings
    from .lean import NotLean, build_lean, read_config

    if not load_settings().fast_decode:
        return None
    try:
        return build_lean(read_config(folder))
    except NotLean:
        return None


def rebuild_rotary_tables(model, config) -> None:
    """The rotary embedding's tables, computed from the config (they are not in a checkpoint); any other module
    whose buffers are still empty is a layout this reader does not know."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if not any(buffer.is_meta for buffer in child.buffers(recurse=False)):
                continue
            if not type(child).__name__.endswith("RotaryEmbedding") or any(True for _ in child.parameters()):
                raise NotPlainLayout(f"buffers of {type(child).__name__} that a checkpoint does not hold")
            setattr(parent, name, type(child)(config=config))
