"""engine/teaching/calculator.py: a planned run's token costs, checked against the harness and the prompt renderer."""

from __future__ import annotations

import re

import pytest

from engine.core.call_formats import lesson_format_names, parse_turn
from engine.core.prompt import Request, count_tools_tokens, render
from engine.core.tooldefs import load_tool_set
from engine.errors import BadInput
from engine.harness.loop import load_scenario, run_scenario
from engine.teaching.calculator import (
    call_text,
    example_arguments,
    malformed_text,
    measure_tools_cost,
    plan_run,
)

TOOLS = load_tool_set("strawberry")
STRAWBERRY = {"word": "strawberry", "letter": "r"}


def test_one_call_matches_the_scripted_strawberry_run():
    plan = plan_run(TOOLS, "native", calls=1, arguments=STRAWBERRY)
    run = run_scenario(load_scenario("strawberry"), "native")
    assert [c.input_tokens for c in plan.calls] == [c.input_tokens for c in run.ledger.calls]
    assert [c.output_tokens for c in plan.calls] == [c.output_tokens for c in run.ledger.calls]


@pytest.mark.parametrize("style", lesson_format_names())
def test_each_call_resends_the_whole_prompt_and_the_definitions(style):
    plan = plan_run(TOOLS, style, calls=3, malformed=1)
    question = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]
    first = render(Request(question, TOOLS, style))
    assert plan.calls[0].input_tokens == first.count
    for call in plan.calls:
        assert call.tools_tokens + call.template_tokens + call.conversation_tokens == call.input_tokens
        assert call.tools_tokens == plan.calls[0].tools_tokens  # the same definitions every time
    assert [c.kind for c in plan.calls] == ["malformed call", "tool call", "tool call", "tool call", "final answer"]
    assert all(b.input_tokens > a.input_tokens for a, b in zip(plan.calls, plan.calls[1:], strict=False))


def test_template_and_tool_spans_add_up_to_the_tools_cost():
    plan = plan_run(TOOLS, "native", calls=0)
    question = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]
    call = plan.calls[0]
    assert call.tools_tokens + call.template_tokens == count_tools_tokens(Request(question, TOOLS)) == 241


@pytest.mark.parametrize("style", lesson_format_names())
def test_a_malformed_call_gets_the_parsers_own_error_and_costs_more_early(style):
    clean = plan_run(TOOLS, style, calls=3)
    early = plan_run(TOOLS, style, calls=3, malformed=1, place="start")
    late = plan_run(TOOLS, style, calls=3, malformed=1, place="end")
    bad = early.calls[0]
    assert bad.error == parse_turn(bad.text, TOOLS, style).errors[0].error
    assert early.input_tokens > late.input_tokens > clean.input_tokens
    assert late.calls[2].kind == "malformed call"


def test_example_arguments_fit_the_schema():
    args = example_arguments(TOOLS[0])
    assert set(args) == {"word", "letter"}
    assert parse_turn(call_text("count_letter", args, "native"), TOOLS).calls
    assert parse_turn(malformed_text(call_text("count_letter", args, "native")), TOOLS).errors


@pytest.mark.parametrize(
    ("calls", "malformed", "tools", "place", "message"),
    [
        (-1, 0, TOOLS, "start", "the number of calls and of malformed calls cannot be negative"),
        (1, 0, [], "start", "a run with tool calls needs at least one tool"),
        (1, 1, TOOLS, "middle", "place must be one of start, end, not 'middle'"),
    ],
    ids=["negative calls", "no tools", "unknown place"],
)
def test_bad_plans_say_what_to_fix(calls, malformed, tools, place, message):
    with pytest.raises(BadInput, match=f"^{re.escape(message)}$"):
        plan_run(tools, "native", calls=calls, malformed=malformed, place=place)


# the one meaning of "what the tools cost": lesson 2's figure and the calculator's split, measured
@pytest.mark.parametrize(
    ("tool_set", "style", "total", "definitions", "instructions"),
    [
        pytest.param("strawberry", "native", 241, 159, 82, id="strawberry-native"),
        pytest.param("strawberry", "react", 198, 70, 128, id="strawberry-react"),
    ],
)
def test_the_tools_cost_is_definitions_plus_instructions(tool_set, style, total, definitions, instructions):
    tools = load_tool_set(tool_set)
    cost = measure_tools_cost(tools, style)
    question = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]
    assert (cost.total, cost.definitions, cost.instructions) == (total, definitions, instructions)
    assert cost.total == count_tools_tokens(Request(question, tools, style))


@pytest.mark.parametrize("tool_set", ["strawberry", "coding-agent", "harness"])
@pytest.mark.parametrize("style", lesson_format_names())
def test_every_call_of_a_planned_run_pays_the_same_tools_cost(tool_set, style):
    tools = load_tool_set(tool_set)
    cost = measure_tools_cost(tools, style)
    plan = plan_run(tools, style, calls=2, malformed=1)
    assert {c.tools_cost for c in plan.calls} == {cost.total}
    assert {c.tools_tokens for c in plan.calls} == {cost.definitions}
    assert plan.tools_cost == cost.total * len(plan.calls) == plan.totals()["tools_cost"]


def test_no_tools_cost_nothing():
    assert measure_tools_cost([], "native") == measure_tools_cost([], "react")
    assert measure_tools_cost([], "native").total == 0
