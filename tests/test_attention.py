"""A decode step's attention and its cache's dtype (engine/model/attention.py): the plain products against
torch's fused kernel, the choice of cache dtype (the setting, the weights, the timing), and an int8
tiny model with a bf16 cache against transformers' forward, on the tiny random-weights Qwen3."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers import chunks_through, tiny_network
from transformers import DynamicCache

from engine.core.prompt import Request, render
from engine.errors import BadInput
from engine.model.attention import CacheChoice, _measured_choice, attend, cache_dtype
from engine.model.fast_build import build_fast_forward


@pytest.mark.parametrize("length", [1, 7, 300])
def test_a_steps_plain_products_give_the_fused_kernels_attention(length):
    generator = torch.Generator().manual_seed(length)
    q = torch.randn(4, 2, 32, generator=generator)
    keys, values = torch.randn(2, 4, length, 32, generator=generator)
    expected = F.scaled_dot_product_attention(q.unsqueeze(0), keys.unsqueeze(0), values.unsqueeze(0), scale=32**-0.5)
    got = attend(q, keys, values, 32**-0.5)
    assert got.shape == (1, 4, 2, 32) and got.dtype == torch.float32
    assert torch.allclose(got, expected, atol=1e-6, rtol=0)


def test_a_bf16_cache_takes_an_fp32_query_and_gives_fp32_back():
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(4, 2, 32, generator=generator)
    keys, values = torch.randn(2, 4, 50, 32, generator=generator)
    exact = attend(q, keys, values, 32**-0.5)
    rounded = attend(q, keys.bfloat16(), values.bfloat16(), 32**-0.5)
    assert rounded.dtype == torch.float32
    # bf16 keeps 8 bits of each key and value: about 1% of a unit-sized output
    assert 0 < float((rounded - exact).abs().max()) < 5e-2


def test_the_setting_decides_and_a_wrong_one_says_what_it_takes(monkeypatch):
    monkeypatch.setenv("QWEN_KV_DTYPE", "bfloat16")
    assert cache_dtype(torch.float32, False, 2, 2, 2, 16) == CacheChoice(torch.bfloat16, "QWEN_KV_DTYPE=bfloat16", {})
    monkeypatch.setenv("QWEN_KV_DTYPE", "float16")
    with pytest.raises(BadInput, match="QWEN_KV_DTYPE must be auto, float32 or bfloat16, not 'float16'"):
        cache_dtype(torch.float32, True, 2, 2, 2, 16)


@pytest.mark.parametrize(("dtype", "int8"), [(torch.float32, False), (torch.bfloat16, False), (torch.bfloat16, True)])
def test_auto_keeps_a_float_models_own_dtype_untimed(monkeypatch, dtype, int8):
    monkeypatch.setenv("QWEN_KV_DTYPE", "auto")
    choice = cache_dtype(dtype, int8, 2, 2, 2, 16)
    assert choice.dtype == dtype and choice.step_ms == {}
    assert "the model's own dtype" in choice.reason


def test_auto_times_both_for_int8_weights_and_keeps_the_faster(monkeypatch, tmp_path):
    monkeypatch.setenv("QWEN_KV_DTYPE", "auto")
    # an empty probe folder: nothing remembered from another run (engine/model/remembered.py)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _measured_choice.cache_clear()
    choice = cache_dtype(torch.float32, True, 4, 2, 2, 64)
    assert set(choice.step_ms) == {"float32", "bfloat16"} and all(ms > 0 for ms in choice.step_ms.values())
    kept, other = ("bfloat16", "float32") if choice.dtype == torch.bfloat16 else ("float32", "bfloat16")
    # the faster kept (the figures shown are rounded: a tie there may go either way)
    assert choice.step_ms[kept] <= choice.step_ms[other]
    assert choice.reason.startswith("a step's attention took") and choice.reason.endswith(
        f"kept in {kept.replace('bfloat16', 'bf16').replace('float32', 'fp32')}"
    )


def test_the_cache_timing_is_remembered_per_machine_and_shape(monkeypatch, tmp_path):
    from engine.model import attention

    monkeypatch.setenv("QWEN_KV_DTYPE", "auto")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    timed = []

    def fake(layers, kv_heads, group, head_dim, threads, native):
        timed.append(layers)
        return CacheChoice(
            torch.bfloat16, "a step's attention took 1.0 ms over bf16 keys: kept in bf16", {"bfloat16": 1.0}
        )

    monkeypatch.setattr(attention, "_measured_choice", fake)
    first = cache_dtype(torch.float32, True, 4, 2, 2, 64)
    later = cache_dtype(torch.float32, True, 4, 2, 2, 64)
    assert timed == [4] and later.dtype == first.dtype == torch.bfloat16 and later.step_ms == first.step_ms
    assert "QWEN_REPROBE=1 times it again" in later.reason
    # another model's shape is timed for itself
    cache_dtype(torch.float32, True, 8, 2, 2, 64)
    assert timed == [4, 8]


def test_an_int8_model_with_a_bf16_cache_stays_within_rounding_of_transformers(monkeypatch, tiny_engine):
    monkeypatch.setenv("QWEN_KV_DTYPE", "bfloat16")
    prompt = render(Request([{"role": "user", "content": "How many r are in strawberry?"}]), tiny_engine.tokenizer).ids
    reference, model = tiny_network("int8"), tiny_network("int8")
    fast = build_fast_forward(model)
    assert fast.cache_choice.dtype == torch.bfloat16 and fast.new_cache(4).data.dtype == torch.bfloat16
    ids = prompt + [1000 + 37 * n for n in range(12)]
    with torch.no_grad():
        expected = chunks_through(reference, ids, len(prompt), DynamicCache(config=reference.config))
        got = chunks_through(fast, ids, len(prompt), fast.new_cache(4))
    assert torch.equal(got.argmax(-1), expected.argmax(-1))
    p, q = expected.softmax(-1), got.softmax(-1)
    # measured: a largest KL of about 1.4e-5 per position, a largest logit gap of about 0.025
    assert float((p * (p.log() - q.log())).sum(-1).max()) < 1e-4
    assert float((got - expected).abs().max()) < 0.1
