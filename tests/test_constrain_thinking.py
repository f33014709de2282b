"""Thinking on (Qwen3's enable_thinking): required and named grammars allow a <think> block before
the call, auto starts no grammar inside the reasoning, and a JSON response_format applied from
the first token leaves no way to call a tool."""

from __future__ import annotations

import pytest
from helpers import BOUNDED, COUNT_CALL

from engine.constrain import grammar
from engine.constrain.masks import inspect_mask, make_constraint, walk
from engine.core.call_formats import parse_turn
from engine.core.generation import GenerationSettings
from engine.core.prompt import Request
from engine.core.tokenizer import REAL_VOCAB, THINK, THINK_END, TOOL_CALL, load_tokenizer
from engine.core.tooldefs import load_tool_set
from engine.model.live import build_constraint, generate_turn


@pytest.fixture(scope="module")
def strawberry():
    grammar.tokenizer_info()
    return load_tool_set("strawberry")


@pytest.mark.parametrize(
    "choice, thinking, allowed, sample",
    [
        ("required", False, 1, ["<tool_call>"]),
        ("required", True, 2, ["<tool_call>", "<think>"]),
        ("count_letter", True, 2, ["<tool_call>", "<think>"]),
        ("auto", True, REAL_VOCAB, None),
    ],
)
def test_first_token_with_and_without_thinking(strawberry, choice, thinking, allowed, sample):
    view = inspect_mask(strawberry, "", choice, thinking=thinking)
    assert view.allowed == allowed
    if sample is not None:
        assert view.sample == sample


@pytest.mark.parametrize("choice", ["required", "count_letter"])
def test_a_think_block_then_the_call(strawberry, choice):
    text = f"<think>\nThe user wants r counted; {COUNT_CALL} is what I will write.\n</think>\n\n{COUNT_CALL}<|im_end|>"
    steps = walk(strawberry, text, choice, thinking=True)
    assert all(s.ok for s in steps) and len(steps) == len(load_tokenizer().encode(text))
    # inside the reasoning every token but the two think tags is allowed
    inside = steps[1]
    assert inside.allowed == REAL_VOCAB - 2
    after = [s for s in steps if s.id == THINK_END][0]
    # after </think>: the template's blank line ("\n\n" or "\n" twice), then the call from its opener
    assert steps[after.index + 1].allowed == 2 and steps[after.index + 2].id == TOOL_CALL
    # without thinking the same turn leaves the grammar at its first token
    refused = walk(strawberry, text, choice)
    assert (len(refused), refused[0].ok, refused[0].id) == (1, False, THINK)


def test_a_thinking_budget_closes_the_reasoning(strawberry):
    constraint = make_constraint(strawberry, "required", thinking=3)
    tok = load_tokenizer()
    for token_id in [THINK, *tok.encode(" one two three")]:
        constraint.next_mask()
        constraint.accept(token_id)
    mask = constraint.next_mask()
    assert constraint.allowed == 1 and bool(mask[THINK_END])


def test_auto_starts_no_grammar_inside_the_reasoning(strawberry):
    text = f"<think>\nMaybe {COUNT_CALL}\n</think>\n\n{COUNT_CALL}"
    steps = walk(strawberry, text, "auto")
    close = [s.index for s in steps if s.id == THINK_END][0]
    # the opener inside the reasoning changed nothing: every step up to </think> is free
    assert all(s.allowed is None and s.state == "free" for s in steps[: close + 1])
    # the opener after it starts the call's grammar
    opener = [s.index for s in steps if s.id == TOOL_CALL][-1]
    assert steps[opener + 1].allowed == 1 and steps[opener + 1].state == "call"
    constraint = make_constraint(strawberry, "auto")
    constraint.accept(THINK)
    assert constraint.reason == "auto: inside the reasoning (<think>); a <tool_call> written here starts no call"
    constraint.accept(TOOL_CALL)
    assert constraint.state == "free" and constraint.next_mask() is None


def test_the_parser_runs_only_the_call_after_the_reasoning(strawberry):
    result = parse_turn(f"<think>\nMaybe {COUNT_CALL}\n</think>\n\n{COUNT_CALL}", strawberry)
    assert [c.name for c in result.calls] == ["count_letter"] and len(result.blocks) == 1


@pytest.mark.slow  # eight sampled turns of the tiny model through the live loop
def test_tiny_model_writes_reasoning_then_a_well_formed_call(tiny_engine):
    request = Request([{"role": "user", "content": "Turn on the kitchen light."}], BOUNDED, enable_thinking=True)
    thought = 0
    for seed in range(8):
        assert build_constraint(tiny_engine, BOUNDED, "required", thinking=True).thinking is True
        # the random model almost never picks </think> itself: a budget of 6 tokens closes it
        constraint = make_constraint(BOUNDED, "required", tiny_engine.tokenizer, thinking=6)
        settings = GenerationSettings(max_new_tokens=60, temperature=1.0, seed=seed, top_k=0)
        generation = generate_turn(tiny_engine, request, settings, constraint)
        result = parse_turn(generation.text, BOUNDED)
        # the first call is whole; required may go on to more calls, and a cut-off one is its last
        assert result.blocks[0].call is not None, generation.text
        if generation.finish == "stop":
            assert not result.errors, generation.text
        else:
            assert [e.block for e in result.errors] in ([], [len(result.blocks) - 1]), generation.text
        if generation.steps[0].id == THINK:
            thought += 1
            assert result.reasoning is not None and "</think>\n\n<tool_call>" in generation.text
    # seeded: some runs reasoned first, some called at once
    assert 0 < thought < 8


# -- auto at the first token --------------------------------------------------------------------------
def test_auto_leaves_the_first_token_free_the_opener_included(strawberry):
    free = inspect_mask(strawberry, "", "auto")
    assert free.mask is None and free.allowed == REAL_VOCAB
    assert TOOL_CALL in free.allowed_ids()
