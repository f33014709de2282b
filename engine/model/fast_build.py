"""The compact forward (engine/model/fast_forward.py) built over a loaded model's weights, once per network.

What it covers (Qwen3ForCausalLM or engine/model/lean.py's network, on a CPU, as shipped) and why not
otherwise; the q/k/v and gate/up projections fused into one product each, float or int8, with the
model's own layers pointing into them so nothing is stored twice; one compact forward per network,
kept while the network lives, and in words which forward runs it.
"""

from __future__ import annotations

import threading
import weakref

import torch

from ..settings import load_settings
from .fast_forward import FastLayer, FastQwen3, Product, SliceOf


def is_lean(model) -> bool:
    """Whether `model` is engine/model/lean.py's network (its class says so: checked as it was built, and its
    forward is this one, without importing transformers)."""
    return getattr(type(model), "lean", False) is True


def unsupported_reason(model) -> str | None:
    """Why the compact forward cannot run `model` (None: it can): it covers Qwen3ForCausalLM on a CPU as shipped,
    and engine/model/lean.py's network (checked as it was built, without importing transformers here)."""
    if not is_lean(model):
        from transformers import Qwen3ForCausalLM

        if not isinstance(model, Qwen3ForCausalLM):
            return f"{type(model).__name__} is not Qwen3ForCausalLM"
    config = model.config
    if model.device.type != "cpu":
        return f"the model is on {model.device.type}, not the CPU"
    if getattr(config, "attention_bias", False):
        return "its attention has biases"
    if config.hidden_act != "silu":
        return f"its activation is {config.hidden_act}, not silu"
    rope = getattr(config, "rope_parameters", None) or {}
    if rope.get("rope_type", "default") != "default":
        return f"its rotary embedding is {rope.get('rope_type')!r}, not the default"
    if any(kind != "full_attention" for kind in getattr(config, "layer_types", None) or []):
        return "some layers use sliding-window attention"
    if model.training:
        return "the model is in training mode"
    for module in model.model.layers.modules():
        if isinstance(module, torch.nn.Linear) and module.bias is not None:
            return "a projection has a bias"
    return None


def _is_int8(module) -> bool:
    return hasattr(module, "_packed_params")


def _reduce_range(module) -> bool:
    """Whether a dynamic int8 Linear's products reduce the input's range (as its own forward does, by its version)."""
    return not (module.version is None or module.version < 4)


def fuse_products(modules: list) -> tuple[Product, list[int]]:
    """One Product for the rows of `modules` stacked (all float nn.Linear, or all int8 dynamic Linear),
    and the row offsets where each starts and the last ends."""
    if all(_is_int8(m) for m in modules):
        weights = [m.weight() for m in modules]
        rows, scales = [], []
        for w in weights:
            if w.qscheme() == torch.per_tensor_affine:
                if w.q_zero_point() != 0:
                    raise ValueError("an int8 weight with a zero point other than 0")
                scales.append(torch.full((w.shape[0],), w.q_scale(), dtype=torch.double))
            elif w.qscheme() == torch.per_channel_affine and w.q_per_channel_axis() == 0:
                if bool(w.q_per_channel_zero_points().ne(0).any()):
                    raise ValueError("an int8 weight with a zero point other than 0")
                scales.append(w.q_per_channel_scales().double())
            else:
                raise ValueError(f"an int8 weight quantized {w.qscheme()}")
            rows.append(w.int_repr())
        ints = torch.cat(rows)
        # the same int8 values and scales, one scale per output row
        fused = torch._make_per_channel_quantized_tensor(
            ints, torch.cat(scales), torch.zeros(ints.shape[0], dtype=torch.long), 0
        )
        product = Product(
            packed=torch.ops.quantized.linear_prepack(fused, None), reduce_range=_reduce_range(modules[0])
        )
    elif all(type(m) is torch.nn.Linear for m in modules):
        product = Product(weight=torch.cat([m.weight.detach() for m in modules]))
    else:
        raise ValueError("the projections mix float and int8 layers")
    offsets = [0]
    for m in modules:
        offsets.append(offsets[-1] + (m.out_features if hasattr(m, "out_features") else m.weight().shape[0]))
    return product, offsets


def _single(module) -> Product:
    if _is_int8(module):
        return Product(packed=module._packed_params._packed_params, reduce_range=_reduce_range(module))
    return Product(weight=module.weight.detach())


def _share(parent, names: list[str], product: Product, offsets: list[int]) -> None:
    """Point the model's own projections into the fused one, so its weights are stored once."""
    for name, start, end in zip(names, offsets, offsets[1:], strict=False):
        module = getattr(parent, name)
        if product.packed is None:
            module.weight = torch.nn.Parameter(product.weight[start:end], requires_grad=False)
        else:
            setattr(parent, name, SliceOf(product, start, end))


def qk_norm_of(attn, config) -> torch.Tensor:
    """q_norm's weight once per query head, then k_norm's once per key/value head: (heads + kv heads, head_dim)."""
    return torch.cat(
        [
            attn.q_norm.weight.detach().expand(config.num_attention_heads, -1),
            attn.k_norm.weight.detach().expand(config.num_key_value_heads, -1),
        ]
    )


def build_fast_forward(model) -> FastQwen3:
    """The compact forward over `model`'s weights (see unsupported_reason for what it covers).

    The model's own q/k/v and gate/up projections then share the fused weights: transformers'
    forward gives the same numbers as before (with int8, computing the whole fused product)."""
    layers = []
    with torch.no_grad():
        for block in model.model.layers:
            attn, mlp = block.self_attn, block.mlp
            qkv, qkv_at = fuse_products([attn.q_proj, attn.k_proj, attn.v_proj])
            gate_up, gate_up_at = fuse_products([mlp.gate_proj, mlp.up_proj])
            qk_norm = qk_norm_of(attn, model.config)
            layers.append(
                FastLayer(
                    block.input_layernorm.weight.detach(),
                    qkv,
                    qk_norm,
                    _single(attn.o_proj),
                    block.post_attention_layernorm.weight.detach(),
                    gate_up,
                    _single(mlp.down_proj),
                )
            )
            _share(attn, ["q_proj", "k_proj", "v_proj"], qkv, qkv_at)
            _share(mlp, ["gate_proj", "up_proj"], gate_up, gate_up_at)
    return FastQwen3(model, layers)


# one per loaded network, built on first use; it goes when the network does. None: not covered.
_built: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_reasons: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_built_lock = threading.Lock()


def adopt(model, fast: FastQwen3, reason: str) -> None:
    """`fast` as `model`'s compact forward: a network built for it alone (engine/model/int8_prepared.py)."""
    with _built_lock:
        _built[model], _reasons[model] = fast, reason


def fast_forward_for(engine) -> FastQwen3 | None:
    """The compact forward of a LoadedModel's network, or None where transformers' forward runs it
    (see unsupported_reason, or QWEN_FAST_DECODE=0)."""
    return fast_forward_of(engine.model)


def fast_forward_of(model) -> FastQwen3 | None:
    """The compact forward over `model` (a network), built once and kept while the network lives; None where
    transformers' forward runs it."""
    try:
        weakref.ref(model)
    except TypeError:  # a stand-in that cannot be weakly referenced: transformers' forward
        return None
    with _built_lock:
        if model not in _built:
            reason = "QWEN_FAST_DECODE=0" if not load_settings().fast_decode else unsupported_reason(model)
            _reasons[model] = reason or "a compact Qwen3 forward (engine/model/fast_forward.py)"
            _built[model] = None if reason else build_fast_forward(model)
        return _built[model]


def forward_reason(engine) -> str | None:
    """In words, which forward pass runs this model's decode (after fast_forward_for has been asked)."""
    return forward_reason_of(engine.model)


def forward_reason_of(model) -> str | None:
    try:
        with _built_lock:
            return _reasons.get(model)
    except TypeError:
        return None
