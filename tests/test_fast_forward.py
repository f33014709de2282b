"""The compact Qwen3 forward (engine/model/fast_forward.py) against transformers' own, on the tiny random-weights model.

Both read the same tokens in the same chunks (a prompt pass, then one token a step, as the
decode loop does): under int8 the activations are quantized per call, so only equal chunks can
give equal numbers. fp32, bf16 (a CPU with AMX loads that) and int8; logits within float noise,
greedy tokens identical.
"""

from __future__ import annotations

import pytest
import torch
from helpers import chunks_through, tiny_network
from transformers import DynamicCache

from engine.core.generation import GenerationSettings
from engine.core.prompt import Request, render
from engine.model.decode import stream_steps
from engine.model.fast_build import build_fast_forward, fast_forward_for, forward_reason, unsupported_reason
from engine.model.fast_forward import KVCache
from engine.model.loading import build_tiny, build_tiny_network
from engine.model.peek import next_logits
from engine.model.prefix_cache import prefix_cache_for
from engine.model.quant import quantize_network

MESSAGES = [{"role": "user", "content": "How many r are in strawberry?"}]
# fp32 differs from transformers by summation order only; int8 may also move an activation's rounding
TOLERANCE = {"float32": 1e-5, "bfloat16": 2e-2, "int8": 1e-3}


@pytest.fixture(scope="module")
def prompt_ids(tiny_engine):
    return render(Request(MESSAGES), tiny_engine.tokenizer).ids


@pytest.mark.parametrize("kind", ["float32", "bfloat16", "int8"])
def test_logits_match_transformers_over_a_prompt_and_steps(prompt_ids, kind):
    reference, model = tiny_network(kind), tiny_network(kind)
    fast = build_fast_forward(model)
    ids = prompt_ids + [1000 + 37 * n for n in range(12)]
    with torch.no_grad():
        expected = chunks_through(reference, ids, len(prompt_ids), DynamicCache(config=reference.config))
        # a reservation far too small: the cache grows as the steps go
        got = chunks_through(fast, ids, len(prompt_ids), fast.new_cache(4))
        # the model's own forward, now over the fused weights, gives what it gave before
        own = chunks_through(model, ids, len(prompt_ids), DynamicCache(config=model.config))
    assert got.shape == expected.shape == (len(ids), 151936)
    assert got.dtype == expected.dtype
    assert torch.allclose(got.float(), expected.float(), atol=TOLERANCE[kind], rtol=0)
    assert torch.equal(got.argmax(-1), expected.argmax(-1))
    assert torch.equal(own, expected)


def test_float_projections_are_stored_once():
    model = build_tiny_network()
    fast = build_fast_forward(model)
    attn, fused = model.model.layers[0].self_attn, fast.layers[0].qkv.weight
    start = fused.untyped_storage().data_ptr()
    for proj in (attn.q_proj, attn.k_proj, attn.v_proj):
        assert proj.weight.untyped_storage().data_ptr() == start
    assert fused.shape == (64 + 32 + 32, 64)


def test_a_whole_prompt_in_one_pass_matches_without_a_cache(prompt_ids):
    reference, model = tiny_network("float32"), tiny_network("float32")
    fast = build_fast_forward(model)
    with torch.no_grad():
        expected = reference(input_ids=torch.tensor([prompt_ids]), logits_to_keep=3).logits
        got = fast(input_ids=torch.tensor([prompt_ids]), logits_to_keep=3).logits
    assert got.shape == (1, 3, 151936)
    assert torch.allclose(got, expected, atol=1e-5, rtol=0)


def slow_twin(monkeypatch):
    """A second tiny engine (same weights) that QWEN_FAST_DECODE=0 keeps on transformers' forward."""
    monkeypatch.setenv("QWEN_FAST_DECODE", "0")
    engine = build_tiny()
    assert fast_forward_for(engine) is None and forward_reason(engine) == "QWEN_FAST_DECODE=0"
    monkeypatch.delenv("QWEN_FAST_DECODE")
    assert fast_forward_for(engine) is None  # decided once per loaded model
    return engine


@pytest.mark.parametrize("int8", [False, True])
def test_decode_loop_with_prefix_reuse_gives_transformers_tokens(monkeypatch, prompt_ids, int8):
    slow = slow_twin(monkeypatch)
    fast = build_tiny()
    if int8:
        quantize_network(slow.model)
        quantize_network(fast.model)
    assert fast_forward_for(fast) is not None and "compact" in forward_reason(fast)
    settings = GenerationSettings(max_new_tokens=10, top_k=5, stop_ids=())
    first = list(stream_steps(fast, prompt_ids, settings))
    # the same prompt plus two more tokens: its prefix comes from the cache the first run kept
    longer = prompt_ids + [first[0].id, first[1].id]
    second = list(stream_steps(fast, longer, settings))
    assert prefix_cache_for(fast).stats.last_reused == len(prompt_ids) - 1
    for ids, got in ((prompt_ids, first), (longer, second)):
        expected = list(stream_steps(slow, ids, settings))
        assert [s.id for s in got] == [s.id for s in expected]
        for a, b in zip(got, expected, strict=True):
            assert abs(a.p - b.p) < TOLERANCE["int8" if int8 else "float32"]
            assert [t.id for t in a.top][:2] == [t.id for t in b.top][:2]


def test_a_peek_sees_the_decode_loops_first_step(tiny_engine, prompt_ids):
    assert fast_forward_for(tiny_engine) is not None
    step = next(stream_steps(tiny_engine, prompt_ids, GenerationSettings(max_new_tokens=1, reuse_prefix=False)))
    probs = torch.softmax(next_logits(tiny_engine, prompt_ids), dim=-1)
    assert abs(float(probs[step.id]) - step.p) < 1e-6


class Wrapped:
    """A stand-in for the network (as the failure tests use): not Qwen3ForCausalLM, so transformers' forward runs it."""

    def __init__(self, model):
        self.model, self.config = model, model.config


def test_what_it_does_not_cover_keeps_transformers_forward(tiny_engine):
    from dataclasses import replace

    wrapped = replace(tiny_engine, model=Wrapped(tiny_engine.model))
    assert fast_forward_for(wrapped) is None
    assert forward_reason(wrapped) == "Wrapped is not Qwen3ForCausalLM"
    sliding = build_tiny_network()
    sliding.config.layer_types = ["sliding_attention", "full_attention"]
    assert unsupported_reason(sliding) == "some layers use sliding-window attention"


def test_bad_calls_say_what_it_reads(tiny_engine):
    fast = fast_forward_for(tiny_engine)
    with pytest.raises(ValueError, match="one sequence at a time"):
        fast(input_ids=torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="its own KVCache"):
        fast(input_ids=torch.zeros(1, 3, dtype=torch.long), cache=DynamicCache(config=tiny_engine.model.config))


def test_the_cache_hands_the_prefix_cache_views_of_what_is_filled(tiny_engine, prompt_ids):
    fast = fast_forward_for(tiny_engine)
    cache = fast.new_cache(8)
    with torch.no_grad():
        fast(input_ids=torch.tensor([prompt_ids[:5]]), cache=cache)
    assert isinstance(cache, KVCache) and cache.get_seq_length() == 5
    pairs = cache.key_value_pairs()
    assert len(pairs) == 2 and pairs[0][0].shape == (1, 2, 5, 16)
    copied = fast.new_cache(5, pairs, 3)
    assert copied.length == 3 and torch.equal(copied.data[:, :, :, :3], cache.data[:, :, :, :3])


def test_positions_past_the_first_rotary_table_match_too():
    from engine.model.fast_forward import _ROPE_START

    reference, model = tiny_network("float32"), tiny_network("float32")
    fast = build_fast_forward(model)
    ids = torch.arange(_ROPE_START + 100).remainder(150000).unsqueeze(0)
    with torch.no_grad():
        expected = reference(input_ids=ids, logits_to_keep=2).logits
        got = fast(input_ids=ids, logits_to_keep=2).logits
    assert fast.rotary_rows(1)[0].shape[0] >= _ROPE_START + 100
    assert torch.allclose(got, expected, atol=1e-4, rtol=0)
