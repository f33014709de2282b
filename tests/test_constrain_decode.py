"""Constrained decoding with the tiny random-weights Qwen3: never malformed, prose untouched.

The 100-run properties sample a batch of 100 rows in one decode loop (one forward pass per step
for all rows, each row with its own StepConstraint, one seeded generator), which is the same
arithmetic as the live loop and a hundred times cheaper than a hundred runs of it; a few runs
also go through the live engine's own loop (engine.model.decode) to check the fit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import BOUNDED

from engine.constrain.grammar import compile_calls
from engine.constrain.masks import make_constraint
from engine.core.call_formats import parse_turn
from engine.core.parse import NOT_CLOSED
from engine.core.prompt import Request, render
from engine.core.tokenizer import END_OF_TEXT, IM_END, REAL_VOCAB
from engine.core.tooldefs import load_tool_set
from engine.model.live import side_by_side

STOPS = (IM_END, END_OF_TEXT)
RUNS = 100  # sampled calls per tool_choice
STRING_RUNS = 50  # calls with free strings, cut off at 24 tokens
PROSE_RUNS = 40  # prose turns under auto, each decoded twice


@pytest.fixture(scope="module")
def engine(tiny_engine):
    return tiny_engine


def prompt_ids(tools: list[dict], question: str) -> list[int]:
    return render(Request([{"role": "user", "content": question}], tools)).ids


def sample_batch(engine, ids: list[int], constraints: list, max_new_tokens: int, seed: int = 0):
    """Sample len(constraints) turns at temperature 1 in one batch; row i uses constraints[i] (or None).

    One forward pass of the transformer per step for all rows; then, per row, the output
    layer over the allowed ids only (softmax over those = the renormalised masked softmax)
    and an inverse-CDF draw from one seeded generator. Exact, and far cheaper than full
    151,936-wide rows when a mask leaves a handful of tokens.
    """
    from transformers import DynamicCache

    model, rows = engine.model, len(constraints)
    weight = model.get_output_embeddings().weight
    generator = torch.Generator().manual_seed(seed)
    cache = DynamicCache(config=model.config)
    # the prompt is the same for every row: one pass, then the cache copied to each row
    with torch.no_grad():
        model.model(input_ids=torch.tensor([ids[:-1]]), cache=cache)
    cache.batch_repeat_interleave(rows)
    feed = torch.tensor([ids[-1:]] * rows)
    out_ids: list[list[int]] = [[] for _ in range(rows)]
    done = [False] * rows
    real = torch.arange(REAL_VOCAB)
    for _ in range(max_new_tokens):
        with torch.no_grad():
            hidden = model.model(input_ids=feed, cache=cache).last_hidden_state[:, -1].float()
            chosen = []
            for i, c in enumerate(constraints):
                if done[i]:
                    chosen.append(IM_END)
                    continue
                mask = None if c is None else c.next_mask()
                # numpy on one thread: torch's pooled nonzero waits on busy cores
                allowed = real if mask is None else torch.from_numpy(np.flatnonzero(mask.numpy()[:REAL_VOCAB]))
                logits = (weight[allowed] if len(allowed) < REAL_VOCAB // 4 else weight[:REAL_VOCAB]) @ hidden[i]
                if len(allowed) >= REAL_VOCAB // 4 and mask is not None:
                    logits = logits.masked_fill(~mask[:REAL_VOCAB], float("-inf"))
                    allowed = real
                cdf = torch.softmax(logits, -1).cumsum(0)
                pick = int(
                    torch.searchsorted(cdf, torch.rand(1, generator=generator) * cdf[-1]).clamp(max=len(cdf) - 1)
                )
                chosen.append(int(allowed[pick]))
        for i, token_id in enumerate(chosen):
            if done[i]:
                continue
            out_ids[i].append(token_id)
            if constraints[i] is not None:
                constraints[i].accept(token_id)
            done[i] = token_id in STOPS
        if all(done):
            break
        feed = torch.tensor([[t] for t in chosen])
    return out_ids, done


def text_of(engine, ids: list[int]) -> str:
    return engine.tokenizer.decode([i for i in ids if i not in STOPS])


@pytest.mark.slow  # 100 sampled turns per tool_choice, batched: about 10 s in all
@pytest.mark.parametrize("choice", ["required", *[t["function"]["name"] for t in BOUNDED]])
def test_every_sampled_call_parses_and_passes_every_check(engine, choice):
    constraints = [make_constraint(BOUNDED, choice, engine.tokenizer) for _ in range(RUNS)]
    runs, done = sample_batch(engine, prompt_ids(BOUNDED, "Turn on the kitchen light."), constraints, 400)
    assert all(done), "a run was cut off by the token limit"
    names = {t["function"]["name"] for t in BOUNDED} if choice == "required" else {choice}
    for ids in runs:
        result = parse_turn(text_of(engine, ids), BOUNDED)
        assert result.errors == [] and result.calls, text_of(engine, ids)
        assert {c.name for c in result.calls} <= names
        if choice != "required":
            assert len(result.calls) == 1


@pytest.mark.slow  # 50 sampled calls with free strings, full-width rows inside the strings
def test_free_string_calls_are_valid_prefixes_or_parse(engine):
    tools = load_tool_set("strawberry")
    constraints = [make_constraint(tools, "required", engine.tokenizer) for _ in range(STRING_RUNS)]
    runs, done = sample_batch(
        engine, prompt_ids(tools, "How many times does the letter r appear in strawberry?"), constraints, 24
    )
    import xgrammar as xgr

    grammar = compile_calls(tools, "calls")
    for ids, finished in zip(runs, done, strict=True):
        # checked again with a fresh matcher: the grammar accepted every token the run chose
        matcher = xgr.GrammarMatcher(grammar)
        assert all(matcher.accept_token(i) for i in ids)
        result = parse_turn(text_of(engine, ids), tools)
        if finished:
            assert result.errors == [] and result.calls
        else:  # cut off by the token limit, which no grammar prevents: the only fault is the missing end
            assert [e.error for e in result.errors] == [NOT_CLOSED]
            assert text_of(engine, ids).startswith('<tool_call>\n{"name": "')


@pytest.mark.slow  # two batches of 40 sampled prose turns, every row full width
def test_auto_leaves_every_prose_turn_byte_identical(engine):
    tools = load_tool_set("coding-agent")
    ids = prompt_ids(tools, "What is the capital of France?")
    free, _ = sample_batch(engine, ids, [None] * PROSE_RUNS, 16, seed=7)
    constraints = [make_constraint(tools, "auto", engine.tokenizer) for _ in range(PROSE_RUNS)]
    auto, _ = sample_batch(engine, ids, constraints, 16, seed=7)
    prose = [i for i, c in enumerate(constraints) if c.calls == 0 and c.state == "free"]
    assert len(prose) >= PROSE_RUNS - 2  # a random model writes <tool_call> about once in 150,000 tokens
    for i in prose:
        assert text_of(engine, auto[i]).encode() == text_of(engine, free[i]).encode()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auto_prose_is_identical_through_the_live_loop(engine, seed):
    from engine.core.generation import GenerationSettings

    request = Request([{"role": "user", "content": "What is the capital of France?"}], load_tool_set("strawberry"))
    both = side_by_side(
        engine, request, "auto", GenerationSettings(max_new_tokens=16, temperature=1.0, top_k=0, seed=seed)
    )
    assert both.first_difference is None
    assert both.constrained.text == both.unconstrained.text
    assert all(s.allowed is None for s in both.constrained.steps)
    assert both.reason.startswith("auto: nothing is restricted")


def test_required_through_the_live_loop_reports_the_mask(engine):
    from engine.core.generation import GenerationSettings

    request = Request([{"role": "user", "content": "Turn on the kitchen light."}], BOUNDED)
    both = side_by_side(
        engine,
        request,
        "required",
        GenerationSettings(max_new_tokens=60, temperature=1.0, top_k=3, seed=3, model_view=True),
    )
    steps = both.constrained.steps
    assert both.constrained.finish == "stop"
    assert steps[0].token == "<tool_call>" and steps[0].allowed == 1 and steps[0].p == pytest.approx(1.0)
    assert steps[1].allowed == 1 and steps[1].token == "\n"
    assert all(s.allowed is not None and 1 <= s.allowed < REAL_VOCAB for s in steps)
    assert all(s.forbidden_mass is not None and s.forbidden_mass > 0.99 for s in steps)  # near-uniform model
    result = parse_turn(both.constrained.text, BOUNDED)
    assert result.errors == [] and result.calls
    assert both.first_difference == 0  # free, the random model never opens with <tool_call>
    assert all(s.allowed is None for s in both.unconstrained.steps)
