"""The harness loop over every shipped scenario, in both styles and under both policies."""

from __future__ import annotations

import pytest

from engine.core.tooldefs import load_tool_set
from engine.errors import BadInput
from engine.harness.loop import (
    STOP_AS_TEXT,
    STOP_FINAL,
    STOP_LIMIT,
    ScriptedModel,
    Turn,
    check_messages,
    list_scenarios,
    load_scenario,
    run_episode,
    run_scenario,
)

SCENARIOS = list_scenarios()
PAIRS = [(name, style) for name in SCENARIOS for style in load_scenario(name).styles]

# scenario -> (error the model reads back after the bad turn, number of calls)
EXPECTED = {
    "strawberry": (None, 2),
    "missing-brace": ("error: the text inside <tool_call></tool_call> is not valid JSON", 7),
    "unknown-tool": (
        "error: unknown tool 'git_commit'; the tools are read_file, list_files, grep, write_file, run_tests",
        5,
    ),
    "raw-newline": ("error: a string in the call contains a raw newline; write it as \\n", 5),
    "cut-off": ("error: the <tool_call> block is not closed with </tool_call>; was the reply cut off?", 5),
    "wrong-type": ("error: argument 'content' of write_file must be a string", 4),
    "extra-argument": ("error: read_file has no argument 'encoding'", 3),
    "fenced-input": ("error: write the Action Input as plain JSON, not inside a ``` code fence", 3),
    "mixed-turn": ("error: the text inside <tool_call></tool_call> is not valid JSON", 3),
    "call-in-thinking": (None, 2),
}
REACT_ERRORS = {
    "missing-brace": "error: the Action Input is not valid JSON",
    "cut-off": "error: the Action Input is not valid JSON",
}


def test_every_scenario_is_tabled():
    assert set(SCENARIOS) == set(EXPECTED)


@pytest.mark.parametrize("name, style", PAIRS)
def test_scenario_per_block(name, style):
    scenario = load_scenario(name)
    run = run_scenario(scenario, style, "per-block")
    error, calls = EXPECTED[name]
    if style == "react":
        error = REACT_ERRORS.get(name, error)
    assert len(run.calls) == calls == len(run.ledger.calls)
    assert run.stop_reason == STOP_FINAL and run.answer
    errors = [e for c in run.ledger.calls for e in c.errors]
    assert errors == ([] if error is None else [error])
    if error is not None:
        bad = run.calls[scenario.malformed_turn]
        # the error goes back as the next message the model reads
        shown = run.messages[bad.result_indices[-1]]
        assert shown == {"role": "tool", "content": error}
        assert (
            f"<tool_response>\n{error}\n</tool_response>" if style == "native" else f"Observation: {error}"
        ) in run.calls[scenario.malformed_turn + 1].prompt.text
    # every call re-sends the whole context, so inputs grow
    inputs = [c.input_tokens for c in run.ledger.calls]
    assert inputs == sorted(inputs) and len(set(inputs)) == len(inputs)


@pytest.mark.parametrize("name, style", PAIRS)
def test_scenario_under_vllm_policy(name, style):
    run = run_scenario(load_scenario(name), style, "vllm")
    if name == "mixed-turn":
        # the JSON error drops the good call too, and the turn ends the run as text
        assert len(run.calls) == 1 and run.stop_reason == STOP_AS_TEXT
        assert run.ledger.calls[0].tool_calls == [] and run.ledger.calls[0].errors == []
    elif style == "native" and name in {"missing-brace", "raw-newline", "cut-off"}:
        # the broken JSON ends the run right there: vLLM hands the turn back as text
        assert run.stop_reason == STOP_AS_TEXT
        assert len(run.calls) == load_scenario(name).malformed_turn + 1
    else:
        assert run.stop_reason == STOP_FINAL


def test_fixing_scenario_really_fixes_the_workspace():
    run = run_scenario(load_scenario("missing-brace"))
    tests = run.calls[5].results[0]
    assert (
        tests.name == "run_tests"
        and tests.ok
        and tests.text.endswith("| Ran 2 tests\n|\n| OK\n[run_tests: end of the tests' output; exit code 0 (passed)]")
    )
    before = run.calls[2].results[0].text
    assert "return a - b" in before


def test_strawberry_run_reads_back_three():
    run = run_scenario(load_scenario("strawberry"))
    assert run.calls[0].results[0].text == "3"
    assert "<tool_response>\n3\n</tool_response>" in run.calls[1].prompt.text
    assert run.answer == 'The letter "r" appears 3 times in "strawberry".'


def test_mixed_turn_runs_the_good_block_and_reports_the_bad():
    call = run_scenario(load_scenario("mixed-turn")).calls[0]
    assert [(r.name, r.ok) for r in call.results] == [("read_file", True), (None, False)]
    assert call.prompt.count < run_scenario(load_scenario("mixed-turn")).calls[1].prompt.count


def test_turn_limit_stops_a_model_that_never_answers():
    call = '<tool_call>\n{"name": "tokenize", "arguments": {"text": "a"}}\n</tool_call>'
    run = run_episode(
        ScriptedModel([Turn(call)] * 10), [{"role": "user", "content": "go"}], load_tool_set("strawberry"), max_turns=3
    )
    assert run.stop_reason == STOP_LIMIT and len(run.calls) == 3


def test_output_tokens_count_im_end_only_when_the_turn_stopped_there():
    run = run_scenario(load_scenario("cut-off"))
    from engine.core.tokenizer import load_tokenizer

    tok = load_tokenizer()
    assert run.ledger.calls[1].output_tokens == tok.count(run.calls[1].turn.text)
    assert run.ledger.calls[0].output_tokens == tok.count(run.calls[0].turn.text) + 1


@pytest.mark.parametrize(
    "data, message",
    [
        ({"role": "user"}, "JSON list"),
        ([{"content": "hi"}], "message 1: needs a role"),
        ([{"role": "robot", "content": "hi"}], "needs a role"),
        ([{"role": "user", "content": 5}], "content must be a string"),
    ],
)
def test_bad_messages_are_explained(data, message):
    with pytest.raises(BadInput, match=message):
        check_messages(data)


def test_unknown_scenario_lists_the_real_ones():
    with pytest.raises(BadInput, match="missing-brace"):
        load_scenario("nope")
    with pytest.raises(BadInput, match="react"):
        load_scenario("mixed-turn").script("react")
