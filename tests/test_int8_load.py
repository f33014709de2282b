"""engine/model/int8_load.py: an int8 model read tensor by tensor is the model quantize_dynamic makes, bit for bit."""

from __future__ import annotations

import json
import struct

import pytest
import torch
from helpers import chunks_through, int8_state
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

import engine.model.quant as quant
from engine.model.embedding import WideningEmbedding
from engine.model.fast_build import build_fast_forward, fast_forward_of
from engine.model.int8_load import READ_STAGE, NotPlainLayout, index_checkpoint, read_int8_model
from engine.model.loading import build_tiny_network, load_weights
from engine.model.quant import quantize_network, quantize_weight

IDS = [1000, 2000, 3000, 4000, 5000, 151643]


def write_tiny(folder, dtype=torch.bfloat16, tied: bool = True, shard: str | None = None):
    network = build_tiny_network()
    if not tied:
        # its own lm_head: the embedding's values plus a little, so a mix-up of the two shows
        network.config.tie_word_embeddings = False
        network.lm_head.weight = torch.nn.Parameter(network.model.embed_tokens.weight.detach() * 1.5)
    network.to(dtype).save_pretrained(folder, **({"max_shard_size": shard} if shard else {}))
    return folder


def through_transformers(folder, dtype):
    return quantize_network(AutoModelForCausalLM.from_pretrained(folder, dtype=dtype).eval())


def weighted_modules(network) -> dict:
    """Each module that holds a weight, by name, with its type: where the checkpoint's tensors went."""
    return {
        name: type(module).__name__
        for name, module in network.named_modules()
        if isinstance(module, torch.nn.Embedding) or type(module).__name__ in ("Linear", "WideningEmbedding")
    }


def assert_same_model(expected, got, fast: bool = True) -> None:
    want, have = int8_state(expected), int8_state(got)
    assert want.keys() == have.keys()
    for name in want:
        assert all(torch.equal(a, b) for a, b in zip(want[name], have[name], strict=True)), name
    assert weighted_modules(expected) == weighted_modules(got)
    with torch.inference_mode():
        want, have = expected(input_ids=torch.tensor([IDS])).logits, got(input_ids=torch.tensor([IDS])).logits
        if getattr(type(got), "lean", False) == getattr(type(expected), "lean", False):
            assert torch.equal(want, have)
        else:
            # a network built without transformers runs the compact forward: equal to it (below), and to
            # transformers' forward up to the float rounding of a different order of sums
            torch.testing.assert_close(want, have, rtol=1e-4, atol=1e-4)
        if not fast:
            return
        # a lean network built its compact forward at its first call above: that one, not a second over fused layers
        fast_want = build_fast_forward(expected)
        fast_have = fast_forward_of(got) if getattr(type(got), "lean", False) else build_fast_forward(got)
        assert fast_have is not None and fast_have.dtype == torch.float32
        assert torch.equal(
            chunks_through(fast_want, IDS, 3, fast_want.new_cache(8)),
            chunks_through(fast_have, IDS, 3, fast_have.new_cache(8)),
        )


@pytest.mark.parametrize(
    ("dtype", "tied", "shard"),
    [
        (torch.bfloat16, True, None),  # as Qwen3-0.6B and 1.7B are published
        (torch.float16, True, None),
        (torch.float32, True, None),  # the tests' tiny folder
        (torch.bfloat16, False, None),  # an lm_head of its own (as the larger Qwen3 sizes)
        (torch.bfloat16, True, "15MB"),  # sharded, with model.safetensors.index.json
    ],
)
def test_a_checkpoint_read_tensor_by_tensor_is_the_model_quantize_dynamic_makes(tmp_path, dtype, tied, shard):
    folder = write_tiny(tmp_path, dtype, tied, shard)
    if shard:
        assert len(list(folder.glob("*.safetensors"))) > 1
    got = read_int8_model(folder)
    assert_same_model(through_transformers(folder, dtype), got)
    embed = got.get_input_embeddings()
    # the embedding keeps the checkpoint's bytes; everything else that is float is fp32
    assert embed.weight.dtype == dtype and isinstance(embed, WideningEmbedding) == (dtype != torch.float32)
    assert {p.dtype for n, p in got.named_parameters() if "embed_tokens" not in n} == {torch.float32}
    assert not any(t.is_meta for t in [*got.parameters(), *got.buffers()])
    assert (
        got.lm_head.weight().shape == (151936, 64)
        and got.lm_head.in_features == 64
        and got.lm_head.out_features == 151936
    )


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 40),
    columns=st.integers(1, 24),
    slice_elements=st.integers(1, 300),
    scale=st.sampled_from([1e-3, 0.02, 1.0, 300.0]),
    seed=st.integers(0, 2**16),
    dtype=st.sampled_from(["bf16", "f32"]),
)
def test_a_weight_quantized_a_slice_of_rows_at_a_time_equals_the_whole_quantized(
    rows, columns, slice_elements, scale, seed, dtype
):
    generator = torch.Generator().manual_seed(seed)
    weight = torch.randn(rows, columns, generator=generator) * scale
    weight = weight.to(torch.bfloat16) if dtype == "bf16" else weight
    bias = torch.randn(rows, generator=generator)
    whole = torch.nn.Sequential(torch.nn.Linear(columns, rows))
    with torch.no_grad():
        whole[0].weight.copy_(weight.float())
        whole[0].bias.copy_(bias)
    torch.ao.quantization.quantize_dynamic(whole, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)
    original = quant._SLICE_ELEMENTS
    quant._SLICE_ELEMENTS = slice_elements
    try:
        sliced = quantize_weight(weight, bias)
    finally:
        quant._SLICE_ELEMENTS = original
    want, have = whole[0].weight(), sliced.weight()
    assert torch.equal(want.int_repr(), have.int_repr()) and want.q_scale() == have.q_scale()
    assert want.q_zero_point() == have.q_zero_point()
    x = torch.randn(3, columns, generator=generator)
    assert torch.equal(whole[0](x), sliced(x))


# -- what the reader does not take: the caller loads through transformers -------------------------------------
def rewrite(folder, change) -> None:
    """The folder's one safetensors file with its tensors changed by `change(tensors)`."""
    path = folder / "model.safetensors"
    tensors = load_file(path)
    change(tensors)
    save_file(tensors, path, metadata={"format": "pt"})


def write_header(folder, header: dict | bytes, data: bytes = b"") -> None:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + data)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (
            lambda t: t.update({"model.extra.weight": torch.zeros(2)}),
            "holds model.extra.weight, which the model has not",
        ),
        (lambda t: t.pop("model.norm.weight"), "lacks model.norm.weight"),
        (
            lambda t: t.update({"model.norm.weight": t["model.norm.weight"].double()}),
            "an entry this reader does not take",
        ),
        (
            lambda t: t.update({"model.norm.weight": t["model.norm.weight"].to(torch.int8)}),
            "an entry this reader does not take",
        ),
    ],
)
def test_a_checkpoint_of_another_layout_is_left_to_transformers(tmp_path, change, why):
    folder = write_tiny(tmp_path)
    rewrite(folder, change)
    with pytest.raises(NotPlainLayout, match=why):
        read_int8_model(folder)


@pytest.mark.parametrize(
    ("header", "data", "why"),
    [
        ({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 6]}}, b"\0" * 6, "do not match its shape"),
        (
            {"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}},
            b"\0" * 4,
            "do not match its shape",
        ),  # cut short
        (
            {
                "w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
                "v": {"dtype": "BF16", "data_offsets": [4, 8]},
            },
            b"\0" * 8,
            "an entry this reader does not take",
        ),
        ({"w": "BF16"}, b"", "an entry this reader does not take"),
        (b"not json", b"", "header is not JSON"),
        (b"[1, 2]", b"", "not a JSON object"),
    ],
)
def test_a_header_that_does_not_hold_together_is_not_read(tmp_path, header, data, why):
    write_header(tmp_path, header, data)
    with pytest.raises(NotPlainLayout, match=why):
        index_checkpoint(tmp_path)


def test_a_config_transformers_cannot_build_is_left_to_transformers(tmp_path):
    folder = write_tiny(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "no-such-model"}))
    with pytest.raises(NotPlainLayout, match="its config builds no model here"):
        read_int8_model(folder)


def test_a_folder_without_safetensors_files_is_not_read(tmp_path):
    with pytest.raises(NotPlainLayout, match="no safetensors files"):
        index_checkpoint(tmp_path)


def test_an_int8_load_reads_a_plain_folder_tensor_by_tensor_and_another_through_transformers(tmp_path, monkeypatch):
    monkeypatch.setenv("QWEN_QUANT", "int8")
    # the checkpoint read into torch's int8 Linear (tests/test_prepared.py covers the prepared weights)
    monkeypatch.setenv("QWEN_PREPARED", "0")
    plain, other = write_tiny(tmp_path / "plain"), write_tiny(tmp_path / "other")
    rewrite(other, lambda t: t.update({"model.extra.weight": torch.zeros(2, dtype=torch.bfloat16)}))
    stages, engines = {}, {}
    for folder in (plain, other):
        stages[folder] = []
        engine = engines[folder] = load_weights(
            str(folder), progress=lambda *event, seen=stages[folder]: seen.append(event)
        )
        assert engine.info.quant == "int8" and engine.info.dtype == "float32"
        assert engine.model.get_input_embeddings().weight.dtype == torch.bfloat16
        assert engine.reasons["decode_step"].startswith("norms, attention and the MLP's gate in C")
    # (each already runs its compact forward, built at load)
    assert_same_model(engines[other].model, engines[plain].model, fast=False)
    said = {folder: [desc for _, _, desc in events] for folder, events in stages.items()}
    assert (
        "quantized the weights to int8 as they were read" in said[plain]
        and "quantizing the weights to int8" not in said[plain]
    )
    assert any(
        s.startswith("loading through transformers (the checkpoint holds model.extra.weight") for s in said[other]
    )
    assert "quantizing the weights to int8" in said[other] and READ_STAGE not in said[other]
    # the read's progress bar: bytes read of every byte of tensor data in the file, in 24 steps (one per tensor)
    reads = [(done, total) for done, total, desc in stages[plain] if desc == READ_STAGE]
    file = plain / "model.safetensors"
    data_bytes = file.stat().st_size - 8 - int.from_bytes(file.read_bytes()[:8], "little")
    assert len(reads) == 24 and {total for _, total in reads} == {data_bytes}
    assert [done for done, _ in reads] == sorted({done for done, _ in reads}) and reads[-1][0] == data_bytes
