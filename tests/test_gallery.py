"""The failure gallery: each case's exact verdicts under both policies, and what it costs."""

from __future__ import annotations

import json

import pytest

from engine.core.call_formats import lesson_format_names, parse_turn
from engine.core.tokenizer import load_tokenizer
from engine.core.tooldefs import load_tool_set
from engine.harness.loop import (
    STOP_AS_TEXT,
    STOP_FINAL,
    STOP_LIMIT,
    STOP_RETRIES,
    ScriptedModel,
    Turn,
    list_gallery,
    list_scenarios,
    load_scenario,
    run_episode,
    run_scenario,
)
from engine.settings import LESSONS
from engine.teaching.gallery import (
    find_block_cut,
    find_length_cut,
    measure_retry_loop,
    measure_schema_cost,
    parse_first_block,
)

NOT_CLOSED = "error: the <tool_call> block is not closed with </tool_call>; was the reply cut off?"
UNKNOWN = "error: unknown tool 'count_letters'; the tools are count_letter, tokenize"
NO_VERBOSE = "error: run_tests has no argument 'verbose'"

# (scenario, style, policy) -> (model calls, why the run stopped, errors sent back, calls run)
VERDICTS = {
    ("two-calls", "native", "per-block"): (2, STOP_FINAL, [], ["count_letter", "tokenize"]),
    ("two-calls", "native", "vllm"): (2, STOP_FINAL, [], ["count_letter", "tokenize"]),
    ("made-up-name", "native", "per-block"): (3, STOP_FINAL, [UNKNOWN], ["count_letter"]),
    ("made-up-name", "native", "vllm"): (3, STOP_FINAL, [UNKNOWN], ["count_letter"]),
    ("made-up-name", "react", "per-block"): (3, STOP_FINAL, [UNKNOWN], ["count_letter"]),
    ("made-up-name", "react", "vllm"): (3, STOP_FINAL, [UNKNOWN], ["count_letter"]),
    ("tool-choice-none", "native", "per-block"): (1, STOP_FINAL, [], []),
    ("tool-choice-none", "native", "vllm"): (1, STOP_FINAL, [], []),
    ("tool-choice-none", "react", "per-block"): (1, STOP_FINAL, [], []),
    ("tool-choice-none", "react", "vllm"): (1, STOP_FINAL, [], []),
    ("endless-number", "native", "per-block"): (3, STOP_FINAL, [NOT_CLOSED], ["grep"]),
    ("endless-number", "native", "vllm"): (1, STOP_AS_TEXT, [], []),
    ("retry-loop", "native", "per-block"): (3, STOP_RETRIES, [NO_VERBOSE] * 3, []),
    ("retry-loop", "native", "vllm"): (3, STOP_RETRIES, [NO_VERBOSE] * 3, []),
    ("retry-loop", "react", "per-block"): (3, STOP_RETRIES, [NO_VERBOSE] * 3, []),
    ("retry-loop", "react", "vllm"): (3, STOP_RETRIES, [NO_VERBOSE] * 3, []),
}


def test_gallery_lists_its_six_cases_apart_from_lesson_4():
    assert list_gallery() == [
        "tag-in-string",
        "two-calls",
        "made-up-name",
        "tool-choice-none",
        "endless-number",
        "retry-loop",
    ]
    assert not set(list_gallery()) & set(list_scenarios())
    for name in list_gallery():
        gallery = load_scenario(name).gallery
        assert set(gallery) == {"failure", "naive", "prevents", "origin"} and all(gallery.values())


def test_every_gallery_run_is_tabled():
    pairs = {
        (n, s, p)
        for n in list_gallery()
        if n != "tag-in-string"
        for s in load_scenario(n).styles
        for p in ("per-block", "vllm")
    }
    assert pairs == set(VERDICTS)


@pytest.mark.parametrize("name, style, policy", list(VERDICTS))
def test_gallery_verdicts(name, style, policy):
    calls, stop, errors, ran = VERDICTS[(name, style, policy)]
    run = run_scenario(load_scenario(name), style, policy)
    assert len(run.calls) == len(run.ledger.calls) == calls
    assert run.stop_reason == stop
    assert [e for c in run.ledger.calls for e in c.errors] == errors
    assert [t["name"] for c in run.ledger.calls for t in c.tool_calls] == ran


# -- </tool_call> inside a string ----------------------------------------------------------------
def test_closing_tag_in_a_string_ends_the_block_early():
    scenario = load_scenario("tag-in-string")
    text = scenario.script("native")[0].text
    cut = find_block_cut(text)
    # the regex stopped at the tag inside the content string, not at the real end
    assert cut.cut_at == text.index("</tool_call>") < text.rindex("</tool_call>")
    assert cut.inside_string is True
    assert cut.left_over == ' on its own line.\\n"}}\n</tool_call>'
    naive = parse_first_block(text)
    assert (naive.name, naive.error) == (None, "the first block is not valid JSON")


@pytest.mark.parametrize("policy", ["per-block", "vllm"])
def test_closing_tag_in_a_string_verdict_shape(policy):
    # the wording of this error belongs to engine.core.parse; here only its shape is checked
    scenario = load_scenario("tag-in-string")
    text = scenario.script("native")[0].text
    parsed = parse_turn(text, scenario.tools, "native", policy)
    assert parsed.calls == [] and len(parsed.blocks) == 1 and len(parsed.errors) == 1
    block = parsed.blocks[0]
    assert block.call is None and block.error and block.end == text.index("</tool_call>") + len("</tool_call>")
    run = run_scenario(scenario, "native", policy)
    if policy == "vllm":
        assert (len(run.calls), run.stop_reason) == (1, STOP_AS_TEXT)
    else:
        assert (len(run.calls), run.stop_reason) == (3, STOP_FINAL)
        assert [len(c.errors) for c in run.ledger.calls] == [1, 0, 0]
        # the escaped slash is the same JSON string: the file holds the tag
        assert run.ledger.calls[1].tool_calls[0]["arguments"]["content"].count("</tool_call>") == 1
        assert find_block_cut(scenario.script("native")[1].text).inside_string is False


# -- two calls in one turn -------------------------------------------------------------------------
def test_first_block_parser_drops_the_second_call():
    text = load_scenario("two-calls").script("native")[0].text
    naive = parse_first_block(text)
    assert (naive.name, naive.blocks_seen, naive.dropped) == ("count_letter", 2, 1)
    ours = parse_turn(text, load_tool_set("strawberry"))
    assert [c.name for c in ours.calls] == ["count_letter", "tokenize"]
    run = run_scenario(load_scenario("two-calls"))
    # both results go back in one user turn, in order
    assert (
        '<|im_start|>user\n<tool_response>\n3\n</tool_response>\n<tool_response>\n["str", "aw", "berry"]\n</tool_response>'
        in run.calls[1].prompt.text
    )


@pytest.mark.parametrize(
    "text, name, error, seen, dropped",
    [
        ("no call here", None, "no closed <tool_call> block", 0, 0),
        ("<tool_call>\n[1, 2]\n</tool_call>", None, "the first block is not a JSON object", 1, 0),
        ('<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b"', "a", None, 2, 1),
    ],
)
def test_first_block_parser_table(text, name, error, seen, dropped):
    naive = parse_first_block(text)
    assert (naive.name, naive.error, naive.blocks_seen, naive.dropped) == (name, error, seen, dropped)


# -- a made-up tool name ---------------------------------------------------------------------------------
@pytest.mark.parametrize("style", lesson_format_names())
def test_made_up_name_is_answered_with_the_real_names_and_recovers(style):
    run = run_scenario(load_scenario("made-up-name"), style)
    assert run.calls[0].results[0].text == UNKNOWN
    assert run.calls[1].results[0].text == "3"


# -- tool_choice none ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("style, tools_tokens", [("native", 241), ("react", 198)])
def test_tool_choice_none_still_pays_for_the_schemas(style, tools_tokens):
    scenario = load_scenario("tool-choice-none")
    assert scenario.tool_choice == "none"
    cost = measure_schema_cost(scenario, style)
    # the same figures as lesson 2: the strawberry tools cost 241 tokens natively, 198 in ReAct
    assert cost.tools_tokens == [tools_tokens] and cost.wasted == tools_tokens
    assert cost.with_tools[0] - cost.without_tools[0] == tools_tokens


# -- a grammar fixes the form, not the stopping ------------------------------------------------------------------
def test_number_that_never_ends_is_cut_at_the_token_limit():
    scenario = load_scenario("endless-number")
    cut = find_length_cut(scenario)
    assert (cut.limit, cut.output_tokens, cut.finish) == (64, 64, "length")
    # every digit is its own token: 40 of the 64 tokens are the number
    assert (cut.kind, cut.repeated) == ("digits", 40) and cut.tail == ["0"] * 8
    run = run_scenario(scenario)
    # a cut turn has no <|im_end|>: its output is the limit exactly
    assert run.ledger.calls[0].output_tokens == 64
    assert run.calls[1].results[0].text == "calc.py:1: def add(a, b):"


# -- a retry loop -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "style, with_budget, without_budget, saved",
    [
        ("native", (3, 1722, 57), (8, 5412, 152), 3785),
        ("react", (3, 1245, 72), (8, 4240, 192), 3115),
    ],
)
def test_retry_budget_bounds_the_loop(style, with_budget, without_budget, saved):
    cost = measure_retry_loop(load_scenario("retry-loop"), style)
    assert (
        cost.with_budget["calls"],
        cost.with_budget["input_tokens"],
        cost.with_budget["output_tokens"],
    ) == with_budget
    assert (
        cost.without_budget["calls"],
        cost.without_budget["input_tokens"],
        cost.without_budget["output_tokens"],
    ) == without_budget
    assert (cost.stop_with, cost.stop_without, cost.saved_tokens) == (STOP_RETRIES, STOP_LIMIT, saved)


def test_a_good_call_earns_the_retries_back():
    bad = Turn('<tool_call>\n{"name": "tokenize", "arguments": {"txt": "a"}}\n</tool_call>')
    good = Turn('<tool_call>\n{"name": "tokenize", "arguments": {"text": "a"}}\n</tool_call>')
    question = [{"role": "user", "content": "go"}]
    tools = load_tool_set("strawberry")
    run = run_episode(ScriptedModel([bad, bad, good, bad, bad, bad]), question, tools, retry_budget=2)
    assert run.stop_reason == STOP_RETRIES and len(run.calls) == 6
    run = run_episode(ScriptedModel([bad] * 3), question, tools, retry_budget=0)
    assert run.stop_reason == STOP_RETRIES and len(run.calls) == 1
    run = run_episode(ScriptedModel([bad] * 3), question, tools, max_turns=3)
    assert run.stop_reason == STOP_LIMIT and len(run.calls) == 3


def test_gallery_json_is_plain_data():
    for name in list_gallery():
        data = json.loads((LESSONS / "scenarios" / f"{name}.json").read_text(encoding="utf-8"))
        assert data["turns"] and data["summary"] and data["lesson"]
    assert load_tokenizer().count(load_scenario("endless-number").script("native")[0].text) == 64


@pytest.mark.parametrize("tool_choice", ["auto", "required"])
def test_grammar_still_allows_the_closing_tag_inside_a_string(tool_choice):
    # what the gallery says: the mask inside write_file's content string lets the one-token
    # </tool_call> through, so only the parser can keep the block whole
    from engine.constrain.masks import inspect_mask

    text = load_scenario("tag-in-string").script("native")[0].text
    prefix = text[: text.index("</tool_call>")]
    view = inspect_mask(load_tool_set("harness"), prefix, tool_choice)
    assert view.state == "call" and view.allowed == 147_021
    assert bool(view.mask[load_tokenizer().token_id("</tool_call>")]) is True


@pytest.mark.parametrize(
    "name, turn, naive_name, per_block_calls, vllm_as_text",
    [
        ("tag-in-string", 0, None, [], True),
        ("two-calls", 0, "count_letter", ["count_letter", "tokenize"], False),
        ("made-up-name", 0, "count_letters", [], False),
        ("tool-choice-none", 0, None, [], False),
        ("endless-number", 0, None, [], True),
        ("retry-loop", 0, "run_tests", [], False),
    ],
)
def test_each_case_at_its_failing_turn(name, turn, naive_name, per_block_calls, vllm_as_text):
    from engine.teaching.gallery import show_gallery_case

    case = show_gallery_case(load_scenario(name))
    assert case.turn_index == turn and case.naive.name == naive_name
    assert [c.name for c in case.ours["per-block"].calls] == per_block_calls
    assert case.ours["vllm"].returned_as_text is vllm_as_text
    react = show_gallery_case(load_scenario("retry-loop"), "react")
    assert react.naive is None and react.cut is None and react.ours["per-block"].errors[0].error == NO_VERBOSE


# -- lesson 6's grammar over each case's failing turn ----------------------------------------------------------
# name -> (tokens walked, the step shown, refused, allowed there, </tool_call> allowed in the string)
GRAMMAR = {
    "tag-in-string": (44, 35, False, 147_021, True),
    "two-calls": (49, None, False, None, None),
    "made-up-name": (8, 7, True, 4, None),
    "tool-choice-none": (15, None, False, None, None),
    "endless-number": (28, 27, True, 3, None),
    "retry-loop": (14, 13, True, 4, None),
}


@pytest.mark.parametrize("name", list(GRAMMAR))
def test_grammar_over_each_failing_turn(name):
    from engine.teaching.gallery import check_grammar

    walked, at, stopped, allowed, tag_allowed = GRAMMAR[name]
    check = check_grammar(load_scenario(name))
    assert (len(check.steps), check.at, check.stopped, check.allowed, check.tag_allowed) == (
        walked,
        at,
        stopped,
        allowed,
        tag_allowed,
    )
    assert check.stopped == (not check.steps[-1].ok)


def test_grammar_refuses_the_made_up_name_and_the_unknown_argument_at_their_first_token():
    from engine.teaching.gallery import check_grammar

    name = check_grammar(load_scenario("made-up-name"))
    assert name.steps[name.at].token == "_letters" and name.sample == ["_", "_l", "_le", "_letter"]
    argument = check_grammar(load_scenario("retry-loop"))
    assert argument.steps[argument.at].token == "verbose" and "pattern" in argument.sample


def test_the_number_is_stopped_by_its_maximum_not_by_the_grammar_itself():
    from engine.teaching.gallery import check_grammar, drop_number_bounds

    check = check_grammar(load_scenario("endless-number"))
    # "100" fits maximum 100; a fourth digit would not, so only the closing braces remain
    assert [s.token for s in check.steps[-4:]] == ["1", "0", "0", "0"] and check.sample == ["}", "}}", "}}\n"]
    # without the bound every one of the turn's 64 tokens passes, up to the token limit
    assert len(check.unbounded_steps) == 64 and all(s.ok for s in check.unbounded_steps)
    bounded = load_tool_set("coding-agent")
    assert "maximum" not in json.dumps(drop_number_bounds(bounded)) and "maximum" in json.dumps(bounded)


def test_no_grammar_for_react_and_none_restricts_nothing():
    from engine.teaching.gallery import check_grammar

    assert check_grammar(load_scenario("retry-loop"), "react") is None
    none = check_grammar(load_scenario("tool-choice-none"))
    assert none.tool_choice == "none" and all(s.allowed is None and s.ok for s in none.steps)
