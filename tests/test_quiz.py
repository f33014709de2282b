"""The figures of the lessons' "check your understanding" answers, exact from the real tokenizer and the harness."""

import pytest

from engine.core.call_formats import lesson_format_names
from engine.core.tokenizer import IM_END, TOOL_CALL, load_tokenizer
from engine.core.tooldefs import add_example_tool, load_tool_set
from engine.harness.loop import load_scenario
from engine.teaching.calculator import measure_tools_cost
from engine.teaching.cost import measure_malformed_cost
from engine.teaching.quiz import FIGURES, compute_quiz_values
from ui.words import lesson


def test_lesson_1_strawberry_is_one_token_and_the_tool_counts_three():
    assert compute_quiz_values("why-call-a-tool") == {
        "spaced_tokens": 1,
        "spaced_id": 72600,
        "bare_tokens": 3,
        "bare_pieces": "str | aw | berry",
        "count": "3",
    }


def test_lesson_2_two_tools_cost_241_and_an_added_tool_its_own_tokens():
    values = compute_quiz_values("tools-as-schemas")
    assert (values["count"], values["total"], values["ten"]) == (2, 241, "2,410")
    assert values["definitions"] + values["instructions"] <= values["total"]
    grown = measure_tools_cost(add_example_tool(load_tool_set("strawberry")), "native").total
    assert (values["with_new"], values["added"]) == (grown, grown - 241)


def test_lesson_2_follows_the_tools_in_the_editor():
    three = add_example_tool(load_tool_set("strawberry"))
    values = compute_quiz_values("tools-as-schemas", tools=three)
    assert (values["count"], values["total"]) == (3, measure_tools_cost(three, "native").total)


@pytest.mark.parametrize(
    "style, tokens, name_at, name_token", [("native", 28, 7, "count"), ("react", 35, 15, " count")]
)
def test_lesson_3_the_call_and_where_its_name_starts(style, tokens, name_at, name_token):
    values = compute_quiz_values("the-model-writes-a-call", style)
    call = load_scenario("strawberry").turns[style][0].text
    assert values["call_tokens"] == load_tokenizer().count(call) + 1 == tokens  # <|im_end|> included
    assert (values["name_at"], values["name_token"], values["tool_call"], values["im_end"]) == (
        name_at,
        name_token,
        TOOL_CALL,
        IM_END,
    )


@pytest.mark.parametrize("style", lesson_format_names())
def test_lesson_4_the_broken_call_costs_what_the_formula_says(style):
    values = compute_quiz_values("check-run-return", style)
    cost = measure_malformed_cost(load_scenario("missing-brace"), style)
    assert values["measured"] == f"{cost.measured_in:,}" and values["formula"].endswith(f"= {cost.measured_in:,}")
    assert values["error"].startswith("error: ") and "not valid JSON" in values["error"]
    assert (values["per_block_ran"], values["vllm_ran"]) == (1, 0)


def test_lesson_5_the_run_ends_on_a_grounded_answer():
    values = compute_quiz_values("when-not-to-call")
    assert (values["calls"], values["answer"]) == (2, 'The letter "r" appears 3 times in "strawberry".')
    france = [{"role": "user", "content": "What is the capital of France?"}]
    assert values["france_tools"] == measure_tools_cost(load_tool_set("strawberry"), "native", france).total


def test_lesson_6_takes_the_pages_mask():
    values = compute_quiz_values("constrained-decoding", allowed=8)
    assert (values["allowed"], values["vocab"], values["tools"]) == (8, "151,669", 2)
    # the cut-off call fails the closing check, not the JSON one (lesson 6's own example)
    assert values["cut_check"] == "the block is closed with </tool_call>" and "not closed" in values["cut_error"]


def test_a_lesson_without_questions_has_no_figures():
    assert compute_quiz_values("glossary") == {}


@pytest.mark.parametrize("lesson_id", sorted(FIGURES))
def test_every_placeholder_of_a_lessons_answers_is_computed(lesson_id):
    text, values = lesson(lesson_id), compute_quiz_values(lesson_id, allowed=8)
    n = 1
    while f"question {n}" in text:
        text[f"question {n}"].format(**values), text[f"answer {n}"].format(**values)  # a missing figure raises KeyError
        n += 1
    assert n > 1, f"{lesson_id} has no questions"
