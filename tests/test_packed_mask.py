"""The packed mask path: xgrammar's int32 words counted and applied without unpacking, the same
numbers as the bool mask, and the model's own view computed only when asked."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.model.decode as decode
from engine.constrain.masks import make_constraint
from engine.constrain.packed_mask import WORDS, bitmask_to_bool, count_allowed, pack_words
from engine.core.generation import GenerationSettings
from engine.core.prompt import Request, render
from engine.core.tokenizer import IM_END, MODEL_VOCAB, REAL_VOCAB, load_tokenizer
from engine.core.tooldefs import load_tool_set
from engine.model.decode import generate, masked_distribution

STRAWBERRY = load_tool_set("strawberry")


def words_of(bits: np.ndarray) -> np.ndarray:
    return np.packbits(bits.astype(np.uint8), bitorder="little").view(np.int32).copy()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, MODEL_VOCAB - 1), max_size=300), st.sampled_from([0.0, 0.3, 1.0]), st.integers(0, 2**31))
def test_the_count_ids_and_bit_tests_agree_with_the_unpacked_mask(chosen, density, seed):
    bits = np.random.default_rng(seed).random(MODEL_VOCAB) < density
    bits[chosen] = True
    words = words_of(bits)
    assert len(words) == WORDS
    real = bits[:REAL_VOCAB]
    assert count_allowed(words) == int(real.sum())  # padding ids never count
    packed = pack_words(words)
    assert packed.allowed_ids().tolist() == np.flatnonzero(real).tolist()
    for token_id in [*chosen[:20], 0, REAL_VOCAB - 1, REAL_VOCAB, MODEL_VOCAB - 1]:
        assert packed.allows(token_id) == (token_id < REAL_VOCAB and bool(bits[token_id]))
    unpacked, allowed = bitmask_to_bool(torch.from_numpy(words).unsqueeze(0))
    assert allowed == int(real.sum()) and unpacked[:REAL_VOCAB].numpy().tolist() == real.tolist()
    assert not unpacked[REAL_VOCAB:].any()


def test_next_packed_and_next_mask_agree_at_every_step_of_a_call():
    tok = load_tokenizer()
    call = tok.encode(
        '<tool_call>\n{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}\n</tool_call>'
    )
    packed_side = make_constraint(STRAWBERRY, "required", tok)
    bool_side = make_constraint(STRAWBERRY, "required", tok)
    counts = []
    for token_id in [*call, IM_END]:
        packed = packed_side.next_packed()
        mask = bool_side.next_mask()
        assert packed.allowed == bool_side.allowed == int(mask.sum())
        assert packed.allowed_ids().tolist() == mask.nonzero().flatten().tolist()
        counts.append(packed.allowed)
        packed_side.accept(token_id)
        bool_side.accept(token_id)
    assert counts[:2] == [1, 1]  # <tool_call>, then its newline
    assert packed_side.state == "done" and packed_side.next_packed() is None


@pytest.mark.parametrize(
    "allowed_ids", [[7], [1000, 1001, 5000], list(range(0, REAL_VOCAB, 2))], ids=["one", "three", "half"]
)
def test_sparse_dense_and_bool_masks_give_the_same_distribution(allowed_ids):
    scaled = torch.randn(MODEL_VOCAB, generator=torch.Generator().manual_seed(0))
    scaled[REAL_VOCAB:] = float("-inf")
    bits = np.zeros(MODEL_VOCAB, dtype=bool)
    bits[allowed_ids] = True
    packed = pack_words(words_of(bits))
    bool_dist = masked_distribution(scaled.clone(), torch.from_numpy(bits.copy()), 0, keep_scaled=True)
    packed_dist = masked_distribution(scaled.clone(), packed, 0, keep_scaled=True)
    expected = torch.softmax(scaled.masked_fill(~torch.from_numpy(bits), float("-inf")), -1)
    for dist in (bool_dist, packed_dist):
        assert dist.allowed == len(allowed_ids)
        full = dist.probs if dist.ids is None else torch.zeros(MODEL_VOCAB).index_put_((dist.ids,), dist.probs)
        assert torch.allclose(full, expected, atol=1e-7)
        assert math.isclose(float(dist.log_total), float(torch.logsumexp(scaled[allowed_ids], -1)), rel_tol=1e-5)
    # a dense mask is applied in place only when the caller does not need the logits afterwards
    kept = scaled.clone()
    masked_distribution(kept, packed, 0, keep_scaled=True)
    assert torch.equal(kept, scaled)


@pytest.fixture(scope="module")
def prompt(tiny_engine):
    return render(
        Request([{"role": "user", "content": "How many r are in strawberry?"}], STRAWBERRY), tiny_engine.tokenizer
    )


def constrained_steps(engine, prompt, **overrides):
    settings_ = GenerationSettings(**{"max_new_tokens": 24, "temperature": 1.0, "seed": 4, "top_k": 3, **overrides})
    return generate(engine, prompt, settings_, make_constraint(STRAWBERRY, "required", engine.tokenizer)).steps


def test_the_in_place_apply_and_the_gather_pick_the_same_tokens(tiny_engine, prompt, monkeypatch):
    gathered = constrained_steps(tiny_engine, prompt)
    monkeypatch.setattr(decode, "SPARSE_LIMIT", -1)  # every masked step through xgrammar's apply_token_bitmask_inplace
    applied = constrained_steps(tiny_engine, prompt)
    assert [s.id for s in applied] == [s.id for s in gathered]
    assert [s.allowed for s in applied] == [s.allowed for s in gathered]
    assert all(math.isclose(a.p, b.p, rel_tol=1e-4) for a, b in zip(applied, gathered, strict=True))


def test_the_models_own_view_is_computed_only_when_asked(tiny_engine, prompt):
    plain = constrained_steps(tiny_engine, prompt)
    viewed = constrained_steps(tiny_engine, prompt, model_view=True)
    assert [s.id for s in plain] == [s.id for s in viewed] and [s.p for s in plain] == [s.p for s in viewed]
    assert all(s.p_unmasked is None and s.forbidden_mass is None and s.top_unmasked is None for s in plain)
    assert all(s.forbidden_mass is not None and 0 <= s.forbidden_mass <= 1 and len(s.top_unmasked) == 3 for s in viewed)
    assert viewed[0].allowed == 1 and viewed[0].token == "<tool_call>"
