"""engine/model/quant.py and threads.py: int8 weights and the thread count, each chosen by a timing unless overridden."""

from __future__ import annotations

import pytest

import engine.model.probe as probe
import engine.model.quant as quant
import engine.model.threads as threads
from engine.errors import BadInput


@pytest.fixture
def fake_products(monkeypatch, tmp_path):
    """Fake decode-step timings for fp32 and int8 (seconds); the cached measurement is cleared around each test, and
    nothing is remembered from an earlier test (engine/model/remembered.py keeps the choice per machine)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def install(fp32: float, int8: float):
        monkeypatch.setattr(quant, "_time_product", lambda quantized, repeats=15: int8 if quantized else fp32)
        quant.cpu_quant.cache_clear()

    yield install
    quant.cpu_quant.cache_clear()


@pytest.mark.parametrize(
    ("fp32", "int8", "expected"),
    [
        (1.0, 0.35, "int8"),  # a quarter of the bytes to read: int8 pays
        (1.0, 0.8, "int8"),  # at the margin
        (1.0, 0.95, "none"),  # no real gain
        (1.0, 6.0, "none"),  # the quantized kernel slower (as on a busy machine's two threads)
    ],
)
def test_int8_is_chosen_on_a_cpu_only_when_the_timing_shows_it_pays(fake_products, monkeypatch, fp32, int8, expected):
    monkeypatch.delenv("QWEN_QUANT", raising=False)
    fake_products(fp32, int8)
    choice = quant.choose_quant("cpu")
    assert choice.quant == expected
    assert f"{int8 / fp32:.2f}x" in choice.reason and ("pay on this CPU" in choice.reason)


def test_qwen_quant_overrides_and_a_gpu_never_gets_int8(fake_products, monkeypatch):
    fake_products(1.0, 0.3)
    monkeypatch.setenv("QWEN_QUANT", "none")
    assert quant.choose_quant("cpu").quant == "none"
    monkeypatch.setenv("QWEN_QUANT", "int8")
    assert quant.choose_quant("cpu").quant == "int8"
    with pytest.raises(BadInput, match="CPU only"):
        quant.choose_quant("cuda")
    monkeypatch.setenv("QWEN_QUANT", "auto")
    assert quant.choose_quant("cuda").quant == "none"
    # an explicit bf16 request keeps bf16 weights under auto
    assert quant.choose_quant("cpu", "bfloat16").quant == "none"
    monkeypatch.setenv("QWEN_QUANT", "int4")
    with pytest.raises(BadInput, match="auto, int8 or none"):
        quant.choose_quant("cpu")


@pytest.mark.parametrize(
    ("one", "more", "expected"),
    [
        (1.0, 0.55, 2),  # two free cores: nearly twice as fast
        (1.0, 0.9, 1),  # little gain: one thread leaves the other core to the server
        (1.0, 3.0, 1),  # a busy machine: the two threads wait for each other
    ],
)
def test_threads_are_chosen_by_the_timing(monkeypatch, one, more, expected):
    monkeypatch.delenv("QWEN_THREADS", raising=False)
    monkeypatch.setattr(threads, "default_threads", lambda: 2)
    import torch

    timings = iter([one, more])
    monkeypatch.setattr(probe, "time_layer", lambda layer, repeats=15: next(timings))
    before = torch.get_num_threads()
    choice = threads.choose_threads(layer=object())
    assert choice.threads == expected and choice.decode_us == {"1": one * 1e6, "2": more * 1e6}
    assert f"{more / one:.2f}x" in choice.reason
    assert torch.get_num_threads() == before  # choosing sets nothing; apply_threads does


def test_qwen_threads_overrides_and_a_bad_value_says_what_to_write(monkeypatch):
    monkeypatch.setenv("QWEN_THREADS", "3")
    assert threads.choose_threads().threads == 3 and threads.choose_threads().reason == "QWEN_THREADS=3"
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("QWEN_THREADS", bad)
        with pytest.raises(BadInput, match="whole number of threads"):
            threads.choose_threads()


def test_the_tiny_model_in_int8_is_labelled_and_agrees_with_fp32(monkeypatch):
    import torch

    from engine.core.generation import GenerationSettings
    from engine.core.prompt import Request
    from engine.model.live import generate_turn
    from engine.model.loading import build_tiny, load_model

    monkeypatch.setenv("QWEN_QUANT", "int8")
    engine = load_model("tiny")
    assert engine.info.quant == "int8" and "int8 weights" in engine.info.label()
    assert engine.reasons["quant"] == "QWEN_QUANT=int8"
    # the compact forward's cache: fp32 here (tests/conftest.py pins QWEN_KV_DTYPE), said in the sidebar's words
    assert engine.reasons["kv_cache"] == "QWEN_KV_DTYPE=float32"
    # its decode steps' small operations in C (engine/model/native_step.c), said in the sidebar's words too
    assert engine.reasons["decode_step"].startswith("norms, attention and the MLP's gate in C between torch's products")
    # a random-weights folder's warning names the int8 weights as every panel's label does
    from dataclasses import replace

    from ui.models import random_label

    folder = replace(engine.info, name="/models/sized-0.6b")
    assert random_label(folder).startswith(
        "Random weights: /models/sized-0.6b (int8 weights, cpu). Its config.json says"
    )
    linear_kinds = {type(m).__module__ for m in engine.model.modules() if type(m).__name__ == "Linear"}
    assert linear_kinds == {"torch.ao.nn.quantized.dynamic.modules.linear"}
    request = Request([{"role": "user", "content": "How many r in strawberry?"}])
    settings = GenerationSettings(max_new_tokens=4, top_k=3, reuse_prefix=False)
    int8 = generate_turn(engine, request, settings)
    fp32 = generate_turn(build_tiny(), request, settings)
    assert [s.id for s in int8.steps] == [s.id for s in fp32.steps]
    for a, b in zip(int8.steps, fp32.steps, strict=True):
        assert 0 < a.p <= 1 and abs(a.p - b.p) < 1e-3 * b.p + 1e-7
    assert int8.model.as_json()["quant"] == "int8"
    assert torch.get_num_threads() >= 1


# -- int8 from a 16-bit checkpoint: read in its own dtype, widened a slice of rows at a time ------------
def test_a_bf16_checkpoint_read_as_bf16_quantizes_to_the_same_int8_as_an_fp32_read(tmp_path):
    import torch
    from helpers import chunks_through, int8_state
    from transformers import AutoModelForCausalLM

    from engine.model.embedding import WideningEmbedding
    from engine.model.fast_build import build_fast_forward
    from engine.model.loading import build_tiny_network

    build_tiny_network().to(torch.bfloat16).save_pretrained(tmp_path)
    wide = quant.quantize_network(AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32).eval())
    narrow = quant.quantize_network(AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.bfloat16).eval())
    expected, got = int8_state(wide), int8_state(narrow)
    assert expected.keys() == got.keys() and len([k for k in got if k.endswith("proj")]) == 14
    for name in expected:
        assert all(torch.equal(a, b.float()) for a, b in zip(expected[name], got[name], strict=True)), name
    # the embedding stays bf16 (half the bytes, its rows widened as read); lm_head's int8 came from the same values
    embed = narrow.get_input_embeddings()
    assert (
        isinstance(embed, WideningEmbedding)
        and embed.weight.dtype == torch.bfloat16
        and embed.weight.shape == (151936, 64)
    )
    assert {p.dtype for n, p in narrow.named_parameters() if "embed_tokens" not in n} == {torch.float32}
    ids = [1000, 2000, 3000, 4000, 5000]
    with torch.no_grad():
        assert torch.equal(wide(input_ids=torch.tensor([ids])).logits, narrow(input_ids=torch.tensor([ids])).logits)
        fast_wide, fast_narrow = build_fast_forward(wide), build_fast_forward(narrow)
        assert fast_narrow.dtype == torch.float32 and fast_narrow.native is not None
        assert torch.equal(
            chunks_through(fast_wide, ids, 3, fast_wide.new_cache(8)),
            chunks_through(fast_narrow, ids, 3, fast_narrow.new_cache(8)),
        )


def test_the_stored_dtype_is_read_from_the_safetensors_headers(tmp_path):
    import json
    import struct

    from engine.model.weights import stored_dtype

    def write(name: str, header: dict | bytes) -> None:
        raw = header if isinstance(header, bytes) else json.dumps(header).encode()
        (tmp_path / name).write_bytes(struct.pack("<Q", len(raw)) + raw)

    assert stored_dtype(tmp_path) is None  # no safetensors file
    write(
        "a.safetensors",
        {
            "__metadata__": {"format": "pt"},
            "w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
            "ids": {"dtype": "I64", "shape": [1], "data_offsets": [4, 12]},
        },
    )
    assert stored_dtype(tmp_path) == "bfloat16"
    write("b.safetensors", {"w2": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}})
    assert stored_dtype(tmp_path) == "bfloat16"  # shards agree
    write("b.safetensors", {"w2": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})
    assert stored_dtype(tmp_path) is None  # shards mix dtypes: read as asked
    for bad in (b"not json", b"[1, 2]", {"w": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}}):
        write("b.safetensors", bad)
        assert stored_dtype(tmp_path) is None
    (tmp_path / "b.safetensors").write_bytes(struct.pack("<Q", 2**40))  # a header length past any real one
    assert stored_dtype(tmp_path) is None
    (tmp_path / "b.safetensors").unlink()
    write("a.safetensors", {"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}})
    assert stored_dtype(tmp_path) == "float16"


def test_an_int8_load_of_a_bf16_folder_reads_it_in_bf16(tmp_path, monkeypatch):
    import torch

    from engine.model.loading import build_tiny_network, load_weights

    build_tiny_network().to(torch.bfloat16).save_pretrained(tmp_path)
    monkeypatch.setenv("QWEN_QUANT", "int8")
    # the checkpoint read into torch's int8 Linear (tests/test_prepared.py covers the prepared weights)
    monkeypatch.setenv("QWEN_PREPARED", "0")
    stages = []
    engine = load_weights(str(tmp_path), progress=lambda done, total, desc: stages.append(desc))
    assert f"loading {tmp_path} into memory (bfloat16, cpu)" in stages
    assert engine.info.quant == "int8" and engine.info.dtype == "float32"
    assert {p.dtype for n, p in engine.model.named_parameters() if "embed_tokens" not in n} == {torch.float32}
    assert engine.model.get_input_embeddings().weight.dtype == torch.bfloat16
    assert engine.reasons["decode_step"].startswith("norms, attention and the MLP's gate in C")


def test_the_int8_timing_is_taken_once_per_machine_and_remembered(fake_products, monkeypatch):
    monkeypatch.delenv("QWEN_QUANT", raising=False)
    fake_products(1.0, 0.4)
    first = quant.choose_quant("cpu")
    # a later process (the cache of this one cleared) reads it, even where a timing now would differ
    fake_products(1.0, 0.95)
    later = quant.choose_quant("cpu")
    assert (first.quant, later.quant) == ("int8", "int8") and later.decode_us == first.decode_us
    assert later.reason.startswith(first.reason) and "QWEN_REPROBE=1 times it again" in later.reason
    monkeypatch.setenv("QWEN_REPROBE", "1")
    fake_products(1.0, 0.95)
    assert quant.choose_quant("cpu").quant == "none"
