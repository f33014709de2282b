"""The parser's limits: short errors whatever the model wrote, a cap on calls per turn, no
infinity, no call run from the reasoning, and the real cause of a block that ended early."""

from __future__ import annotations

import json
import time

import pytest

from engine.core.call_formats import parse_turn
from engine.core.parse import (
    BLOCK_PATTERN,
    ENDED_EARLY,
    MAX_CALLS,
    MAX_ERROR_CHARS,
    NOT_JSON,
    split_reasoning,
    too_many_calls,
)
from engine.core.tooldefs import load_tool_set
from engine.harness.loop import STOP_FINAL, list_scenarios, load_scenario, run_scenario

STRAWBERRY = load_tool_set("strawberry")


def block(name: str, arguments: str) -> str:
    return f'<tool_call>\n{{"name": {json.dumps(name)}, "arguments": {arguments}}}\n</tool_call>'


COUNT = block("count_letter", '{"word": "strawberry", "letter": "r"}')


# -- error strings stay short and still name the problem -------------------------------------------
@pytest.mark.parametrize(
    "label, text, expected",
    [
        (
            "a 100,000-character tool name",
            block("x" * 100_000, "{}"),
            "error: unknown tool 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (100,000 characters); the tools are count_letter, tokenize",
        ),
        (
            "a 100,000-character argument name",
            block("tokenize", json.dumps({"text": "a", "y" * 100_000: 1})),
            "error: tokenize has no argument 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy... (100,000 characters)",
        ),
        (
            "forty unlisted arguments",
            block("tokenize", json.dumps({"text": "a", **{f"k{i}": i for i in range(40)}})),
            "error: tokenize has no arguments 'k0', 'k1', 'k2', 'k3', 'k4' and 35 more",
        ),
        ("a 100,000-character value outside an enum", block("pick", json.dumps({"colour": "q" * 100_000})), None),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 60 else "",
)
def test_errors_are_short_and_name_the_problem(label, text, expected):
    pick = {
        "type": "function",
        "function": {
            "name": "pick",
            "parameters": {"type": "object", "properties": {"colour": {"enum": ["red", "blue"]}}},
        },
    }
    started = time.perf_counter()
    result = parse_turn(text, [*STRAWBERRY, pick])
    assert time.perf_counter() - started < 2
    [error] = result.errors
    assert len(error.error) <= MAX_ERROR_CHARS
    if expected is not None:
        assert error.error == expected.replace("count_letter, tokenize", "count_letter, tokenize, pick")
    else:
        # the schema check's own message is cut, and still says which argument
        assert error.error.startswith("error: argument 'colour' of pick: 'qqqq")


# -- at most MAX_CALLS calls per turn ----------------------------------------------------------------
def test_calls_past_the_limit_are_reported_and_not_run():
    text = "\n".join([COUNT] * 20)
    result = parse_turn(text, STRAWBERRY)
    assert len(result.calls) == MAX_CALLS == 16
    assert [e.block for e in result.errors] == [16]
    assert (
        result.errors[0].error
        == too_many_calls(20)
        == (
            "error: this turn has 20 tool calls; at most 16 are run per turn, so calls 17 to 20 were not run; "
            "make the others in a later turn"
        )
    )
    excess = result.blocks[-1]
    assert excess.index == 16 and excess.start == text.index(COUNT, 16 * (len(COUNT) + 1)) and excess.call is None
    assert [(c.name, c.passed) for c in excess.checks][0] == ("count", False)


def test_a_hundred_thousand_blocks_take_well_under_a_second_or_two():
    text = "<tool_call>{}</tool_call>" * 100_000
    started = time.perf_counter()
    result = parse_turn(text, STRAWBERRY)
    assert time.perf_counter() - started < 3
    assert len(result.blocks) == 17 and result.errors[-1].error == too_many_calls(100_000)


def test_the_harness_sends_the_excess_back_as_one_error():
    from engine.harness.loop import ScriptedModel, Turn, run_episode

    turn = Turn("\n".join([COUNT] * 18))
    run = run_episode(ScriptedModel([turn, Turn("Done.")]), [{"role": "user", "content": "go"}], STRAWBERRY)
    first = run.ledger.calls[0]
    assert len(first.tool_calls) == 16 and first.errors == [too_many_calls(18)]


# -- infinity is not JSON ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "number, error",
    [
        (
            "1e400",
            "error: the number '1e400' is too large to read (it would be infinity, which is not JSON); write a finite number",
        ),
        (
            "-1e400",
            "error: the number '-1e400' is too large to read (it would be infinity, which is not JSON); write a finite number",
        ),
        ("1e308", None),
        ("Infinity", NOT_JSON),
        ("NaN", NOT_JSON),
    ],
)
def test_numbers_too_large_for_a_float_are_refused(number, error):
    tools = [
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "number"}}}},
        }
    ]
    result = parse_turn(block("f", f'{{"x": {number}}}'), tools)
    assert (result.errors[0].error if result.errors else None) == error
    if error is None:
        assert result.calls[0].arguments == {"x": 1e308}
        # what is read can be written back as JSON
        json.dumps(result.calls[0].arguments, allow_nan=False)


# -- a call inside the reasoning is not run ----------------------------------------------------------
@pytest.mark.parametrize(
    "label, text, reasoning, calls",
    [
        ("a call only in the reasoning", f"<think>\n{COUNT}\n</think>\n\nThree.", f"\n{COUNT}\n", []),
        (
            "a call in the reasoning and one after it",
            f"<think>\n{COUNT}\n</think>\n\n{COUNT}",
            f"\n{COUNT}\n",
            ["count_letter"],
        ),
        ("reasoning cut off before </think>", f"<think>\nmaybe {COUNT}", f"\nmaybe {COUNT}", []),
        (
            "the prompt ended with <think>: only </think> is written",
            f"draft {COUNT}\n</think>\n\n{COUNT}",
            f"draft {COUNT}\n",
            ["count_letter"],
        ),
        ("no reasoning", COUNT, None, ["count_letter"]),
        ("a <think> after the answer began is text", f"{COUNT} <think>", None, ["count_letter"]),
    ],
    ids=lambda v: v if isinstance(v, str) and not v.startswith(("<", "\n", "d")) else "",
)
@pytest.mark.parametrize("policy", ["per-block", "vllm"])
def test_calls_inside_the_reasoning_are_not_run(label, text, reasoning, calls, policy):
    result = parse_turn(text, STRAWBERRY, "native", policy)
    assert result.reasoning == reasoning
    assert [c.name for c in result.calls] == calls
    assert result.final is (not calls) and result.errors == []


def test_split_reasoning_offsets():
    text = f"<think>\nx\n</think>\n\n{COUNT}"
    reasoning, start = split_reasoning(text)
    assert (reasoning, text[start:]) == ("\nx\n", f"\n\n{COUNT}")
    block_found = parse_turn(text, STRAWBERRY).blocks[0]
    # block offsets stay offsets into the whole turn, for drawing it
    assert text[block_found.start : block_found.end] == COUNT


def test_call_in_thinking_scenario_is_lesson_4s():
    assert "call-in-thinking" in list_scenarios()
    scenario = load_scenario("call-in-thinking")
    text = scenario.script("native")[0].text
    # vLLM's tool regex alone, over the whole turn, finds the draft too
    assert len(BLOCK_PATTERN.findall(text)) == 2


@pytest.mark.parametrize("policy", ["per-block", "vllm"])
def test_call_in_thinking_verdicts(policy):
    run = run_scenario(load_scenario("call-in-thinking"), "native", policy)
    assert (len(run.calls), run.stop_reason) == (2, STOP_FINAL)
    # only the call after </think> runs: the draft in the reasoning asked for "R"
    assert [c.tool_calls for c in run.ledger.calls] == [
        [{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}],
        [],
    ]
    assert [c.errors for c in run.ledger.calls] == [[], []]
    first = run.calls[0].parse
    assert '"letter": "R"' in first.reasoning and [b.index for b in first.blocks] == [0]
    assert run.calls[0].results[0].text == "3"
    assert run.answer == 'The letter "r" appears 3 times in "strawberry".'


# -- a </tool_call> inside a string ends the block early --------------------------------------------
def test_a_closing_tag_inside_a_string_says_the_block_ended_early():
    text = load_scenario("tag-in-string").script("native")[0].text
    for policy in ("per-block", "vllm"):
        result = parse_turn(text, load_tool_set("harness"), "native", policy)
        assert [e.error for e in result.errors] == [ENDED_EARLY]
    assert ENDED_EARLY == (
        "error: the block ended early, at a </tool_call> written inside a JSON string; "
        "write that tag inside a string as <\\/tool_call>"
    )
    # a block that is broken JSON for another reason keeps the plain error
    assert parse_turn(block("tokenize", '{"text": "a"'), STRAWBERRY).errors[0].error == NOT_JSON
