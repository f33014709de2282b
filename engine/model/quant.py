"""int8 weights on a CPU: torch's dynamic quantization of every nn.Linear, applied at load where a timing shows it pays.

Follows PyTorch's dynamic quantization recipe (`torch.ao.quantization.quantize_dynamic` with
`{nn.Linear}` and `qint8`, as its "Dynamic Quantization" tutorial applies it to BERT): each
Linear's weight is stored as int8 with one scale per tensor, and each product quantizes its input
on the fly, so a decode step reads a quarter of fp32's bytes. The embedding and the norms stay
fp32. torchao's int8 weight-only scheme is the maintained successor; it is not on this
project's package index, so the choice here was measured between fp32, bf16 and this.

`cpu_quant()` times one decode-shaped product (a row through a 2048 x 6144 layer, Qwen3-1.7B's
MLP) in fp32 and through a quantized copy, the fastest of a few runs each, and chooses int8 when
it takes at most `_INT8_RATIO` of fp32's time. QWEN_QUANT=int8|none overrides (engine/settings.py).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import asdict, dataclass

from ..errors import BadInput
from ..settings import load_settings
from .probe import decode_layer, one_thread, time_layer

QUANTS = ("auto", "int8", "none")
# int8 must make that product at least this much faster (it reads a quarter of the bytes: about 0.3-0.5 here)
_INT8_RATIO = 0.8
# rows of a weight widened to fp32 at a time when it is quantized (4 MB of fp32 at Qwen3-1.7B's width)
_SLICE_ELEMENTS = 1 << 20


@dataclass(frozen=True)
class QuantChoice:
    """Whether the weights are quantized on this machine, and why (timings in microseconds, the fastest of each)."""

    quant: str  # "int8" or "none"
    reason: str
    decode_us: dict  # {"float32": us, "int8": us}: empty when QWEN_QUANT or the device decided

    def as_json(self) -> dict:
        return asdict(self)


def _time_product(quantized: bool, repeats: int = 15) -> float:
    """The fastest of `repeats` timings, in seconds, of one row through a 2048 -> 6144 Linear (fp32, or int8 if `quantized`).

    The fastest, as engine/model/cpu_speed.py takes it: other processes only ever add time. Timed on
    one thread: a fair count of the bytes each reads (engine/model/threads.py then times the threads)."""
    with one_thread():
        return _time_once(quantized, repeats)


def _time_once(quantized: bool, repeats: int) -> float:
    layer = decode_layer()
    if quantized:
        layer = quantize_network(layer)
    return time_layer(layer, repeats)


@functools.lru_cache(maxsize=1)
def cpu_quant() -> QuantChoice:
    """int8 where a quantized product beats fp32 on this CPU: timed once per machine (about 0.1-0.8 s) and
    remembered (engine/model/remembered.py)."""
    from .remembered import remembered

    def decode(entry: dict, when: str) -> QuantChoice | None:
        if entry["quant"] not in ("int8", "none") or not isinstance(entry["decode_us"], dict):
            return None
        return QuantChoice(entry["quant"], entry["reason"] + when, entry["decode_us"])

    return remembered("quant.json", "int8 against fp32", _timed_quant, QuantChoice.as_json, decode)


def _timed_quant() -> QuantChoice:
    fp32 = _time_product(False)
    int8 = _time_product(True)
    ratio = int8 / fp32
    pays = ratio <= _INT8_RATIO
    reason = f"an int8 product took {ratio:.2f}x the time of fp32 for a decode step: " + (
        "int8 weights pay on this CPU" if pays else "int8 weights do not pay on this CPU"
    )
    return QuantChoice(
        "int8" if pays else "none", reason, {"float32": round(fp32 * 1e6, 1), "int8": round(int8 * 1e6, 1)}
    )


def choose_quant(device: str, dtype: str | None = None, requested: str | None = None) -> QuantChoice:
    """int8 or none for a model on `device`: QWEN_QUANT (or `requested`) when set, else measured on a CPU.

    int8 runs on a CPU only (torch's quantized kernels are CPU kernels); an explicit `dtype`
    other than float32 (QWEN_DTYPE=bfloat16, say) keeps that dtype unquantized under auto."""
    requested = requested or load_settings().quant
    if requested not in QUANTS:
        raise BadInput(f"quant must be auto, int8 or none, not {requested!r} (QWEN_QUANT)")
    if requested == "none":
        return QuantChoice("none", "QWEN_QUANT=none", {})
    if device != "cpu":
        if requested == "int8":
            raise BadInput(
                f"int8 weights run on a CPU only (torch's quantized kernels), not on {device}: "
                "set QWEN_DEVICE=cpu or QWEN_QUANT=none"
            )
        return QuantChoice("none", f"weights stay {dtype or 'as loaded'} on {device}: int8 is for CPUs", {})
    if requested == "int8":
        return QuantChoice("int8", "QWEN_QUANT=int8", {})
    if dtype not in (None, "auto", "float32"):
        return QuantChoice("none", f"QWEN_DTYPE={dtype} asked for {dtype} weights", {})
    return cpu_quant()


def select_quantized_engine() -> None:
    """torch's x86 engine (fbgemm with onednn) for the int8 kernels where torch has it; qnnpack on ARM."""
    import torch

    engines = torch.backends.quantized.supported_engines
    if "x86" in engines:
        torch.backends.quantized.engine = "x86"
    elif "qnnpack" in engines:
        torch.backends.quantized.engine = "qnnpack"


def quantize_weight(weight, bias):
    """torch's dynamic int8 Linear for `weight` (any float dtype), widened to fp32 a slice of rows at a time.

    The same observer as quantize_dynamic's sees every slice (a running min and max is the
    whole tensor's), then each slice is quantized with the one scale: an elementwise step, so
    the int8 values are those of the whole fp32 matrix."""
    import torch
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear
    from torch.ao.quantization.qconfig import default_dynamic_qconfig

    rows = max(1, _SLICE_ELEMENTS // max(1, weight.shape[1]))
    observer = default_dynamic_qconfig.weight()
    for begin in range(0, weight.shape[0], rows):
        observer(weight[begin : begin + rows].float())
    scale, zero_point = observer.calculate_qparams()
    scale, zero_point = float(scale), int(zero_point)
    ints = torch.empty(weight.shape, dtype=torch.int8)
    for begin in range(0, weight.shape[0], rows):
        part = torch.quantize_per_tensor(weight[begin : begin + rows].float(), scale, zero_point, torch.qint8)
        ints[begin : begin + rows] = part.int_repr()
    qweight = torch._make_per_tensor_quantized_tensor(ints, scale, zero_point)
    # built at 1x1 and then given its weight: built at full size it would pack a placeholder matrix as large
    linear = DynamicLinear(1, 1, dtype=torch.qint8)
    linear.set_weight_bias(qweight, None if bias is None else bias.float())
    linear.in_features, linear.out_features = weight.shape[1], weight.shape[0]
    return linear


def quantize_network(model):
    """`model` with every nn.Linear's weight in int8 (torch's dynamic quantization) and the rest in fp32, on the CPU.

    A model loaded in its checkpoint's bf16 or fp16 (through transformers, where
    engine/model/int8_load.py does not read the checkpoint itself) has each Linear quantized by
    quantize_weight, a slice of rows widened at a time: the int8 values are those of an fp32 load
    (widening a bf16 or fp16 number is exact), and no fp32 copy of the model, nor of one of its
    matrices, exists at once. The norms are then widened; the embedding
    stays 16-bit and gives fp32 rows (engine/model/embedding.py), the same numbers in half the bytes."""
    import torch

    from .embedding import WideningEmbedding

    with warnings.catch_warnings():
        # torch >= 2.10 says eager quantization moves to torchao; the kernels are the same and still shipped
        warnings.simplefilter("ignore")
        select_quantized_engine()
        if all(p.dtype == torch.float32 for p in model.parameters()):
            # in place: a copy of a 1.7B fp32 model would double the memory at load
            return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)
        embed = model.get_input_embeddings()
        for parent in list(model.modules()):
            for name, child in list(parent.named_children()):
                if type(child) is torch.nn.Linear:
                    bias = None if child.bias is None else child.bias.detach()
                    setattr(parent, name, quantize_weight(child.weight.detach(), bias))
                    # the 16-bit weight goes now, not when the collector finds the old Linear
                    child.weight = None
        # the norms (and any other float) widened; the embedding kept 16-bit, its rows widened as they are read
        model.set_input_embeddings(torch.nn.Identity())
        model.float()
        # a copy of its own: a view into the checkpoint's mapped file would keep the whole file mapped
        embed.weight.data = embed.weight.data.clone()
        model.set_input_embeddings(WideningEmbedding(embed))
        return model
