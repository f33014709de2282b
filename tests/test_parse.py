"""Parser verdicts: a table of good and bad turns, natively under both policies and in ReAct."""

from __future__ import annotations

import json

import pytest

from engine.core.call_formats import parse_turn
from engine.core.call_formats.native import find_blocks
from engine.core.parse import (
    ARGS_NOT_OBJECT,
    BAD_SHAPE,
    EMPTY_BLOCK,
    NATIVE_CHECKS,
    NOT_CLOSED,
    NOT_JSON,
    RAW_NEWLINE,
    REACT_BOTH,
    REACT_FENCED,
    REACT_INPUT_NOT_OBJECT,
    REACT_NO_ACTION,
    REACT_NO_INPUT,
    REACT_NOT_JSON,
)
from engine.core.tooldefs import load_tool_set
from engine.errors import BadInput

TOOLS = load_tool_set("strawberry")
HARNESS = load_tool_set("harness")
TYPED = [
    {
        "type": "function",
        "function": {
            "name": "convert",
            "parameters": {
                "type": "object",
                "properties": {
                    "value": {"type": "number"},
                    "unit": {"enum": ["celsius", "fahrenheit"]},
                    "precise": {"type": "boolean"},
                },
                "required": ["value", "unit"],
            },
        },
    }
]
UNKNOWN_GIT = "error: unknown tool 'git_commit'; the tools are count_letter, tokenize"


def block(body: str) -> str:
    return f"<tool_call>\n{body}\n</tool_call>"


def call(name, arguments) -> str:
    return block(json.dumps({"name": name, "arguments": arguments}))


GOOD = call("count_letter", {"word": "strawberry", "letter": "r"})

# (id, turn text, tools, expected call names, expected (block, error) pairs, final) under per-block
NATIVE_TABLE = [
    ("valid", GOOD, TOOLS, ["count_letter"], [], False),
    (
        "valid-no-newlines",
        '<tool_call>{"name": "tokenize", "arguments": {"text": "hi"}}</tool_call>',
        TOOLS,
        ["tokenize"],
        [],
        False,
    ),
    ("prose-is-final", "The letter r appears 3 times.", TOOLS, [], [], True),
    ("empty-turn-is-final", "", TOOLS, [], [], True),
    (
        "missing-brace",
        block('{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}'),
        TOOLS,
        [],
        [(0, NOT_JSON)],
        False,
    ),
    ("trailing-comma", block('{"name": "tokenize", "arguments": {"text": "a",}}'), TOOLS, [], [(0, NOT_JSON)], False),
    ("single-quotes", block("{'name': 'tokenize', 'arguments': {'text': 'a'}}"), TOOLS, [], [(0, NOT_JSON)], False),
    ("nan", block('{"name": "tokenize", "arguments": {"text": NaN}}'), TOOLS, [], [(0, NOT_JSON)], False),
    (
        "duplicate-key",
        block('{"name": "tokenize", "name": "tokenize", "arguments": {"text": "a"}}'),
        TOOLS,
        [],
        [(0, NOT_JSON)],
        False,
    ),
    (
        "raw-newline",
        block('{"name": "tokenize", "arguments": {"text": "line one\nline two"}}'),
        TOOLS,
        [],
        [(0, RAW_NEWLINE)],
        False,
    ),
    (
        "escaped-newline",
        block('{"name": "tokenize", "arguments": {"text": "line one\\nline two"}}'),
        TOOLS,
        ["tokenize"],
        [],
        False,
    ),
    ("empty-block", "<tool_call>\n\n</tool_call>", TOOLS, [], [(0, EMPTY_BLOCK)], False),
    (
        "cut-off",
        '<tool_call>\n{"name": "count_letter", "arguments": {"word": "straw',
        TOOLS,
        [],
        [(0, NOT_CLOSED)],
        False,
    ),
    ("not-an-object", block('["count_letter", {"word": "x"}]'), TOOLS, [], [(0, BAD_SHAPE)], False),
    ("missing-arguments-key", block('{"name": "tokenize"}'), TOOLS, [], [(0, BAD_SHAPE)], False),
    (
        "extra-top-level-key",
        block('{"name": "tokenize", "arguments": {"text": "a"}, "id": 1}'),
        TOOLS,
        [],
        [(0, BAD_SHAPE)],
        False,
    ),
    ("unknown-tool", call("git_commit", {"message": "fix"}), TOOLS, [], [(0, UNKNOWN_GIT)], False),
    (
        "near-miss-name",
        call("count_letters", {"word": "a", "letter": "a"}),
        TOOLS,
        [],
        [(0, "error: unknown tool 'count_letters'; the tools are count_letter, tokenize")],
        False,
    ),
    (
        "name-not-string",
        block('{"name": 7, "arguments": {}}'),
        TOOLS,
        [],
        [(0, "error: unknown tool 7; the tools are count_letter, tokenize")],
        False,
    ),
    (
        "arguments-a-string",
        block('{"name": "tokenize", "arguments": "{\\"text\\": \\"a\\"}"}'),
        TOOLS,
        [],
        [(0, ARGS_NOT_OBJECT)],
        False,
    ),
    (
        "missing-required",
        call("count_letter", {"word": "strawberry"}),
        TOOLS,
        [],
        [(0, "error: missing required argument 'letter' for count_letter")],
        False,
    ),
    (
        "missing-two",
        call("count_letter", {}),
        TOOLS,
        [],
        [(0, "error: missing required arguments 'word', 'letter' for count_letter")],
        False,
    ),
    (
        "extra-argument",
        call("count_letter", {"word": "a", "letter": "a", "case": "any"}),
        TOOLS,
        [],
        [(0, "error: count_letter has no argument 'case'")],
        False,
    ),
    (
        "wrong-type",
        call("count_letter", {"word": "strawberry", "letter": 5}),
        TOOLS,
        [],
        [(0, "error: argument 'letter' of count_letter must be a string")],
        False,
    ),
    (
        "null-value",
        call("tokenize", {"text": None}),
        TOOLS,
        [],
        [(0, "error: argument 'text' of tokenize must be a string")],
        False,
    ),
    (
        "enum-violation",
        call("convert", {"value": 3, "unit": "kelvin"}),
        TYPED,
        [],
        [(0, "error: argument 'unit' of convert: 'kelvin' is not one of ['celsius', 'fahrenheit']")],
        False,
    ),
    (
        "number-as-string",
        call("convert", {"value": "3", "unit": "celsius"}),
        TYPED,
        [],
        [(0, "error: argument 'value' of convert must be a number")],
        False,
    ),
    ("boolean-ok", call("convert", {"value": 3.5, "unit": "celsius", "precise": True}), TYPED, ["convert"], [], False),
    (
        "two-good",
        GOOD + "\n" + call("tokenize", {"text": "strawberry"}),
        TOOLS,
        ["count_letter", "tokenize"],
        [],
        False,
    ),
    (
        "mixed-json-error",
        GOOD + "\n" + block('{"name": "tokenize", "arguments": {"text": "a"}'),
        TOOLS,
        ["count_letter"],
        [(1, NOT_JSON)],
        False,
    ),
    ("mixed-schema-error", GOOD + "\n" + call("git_commit", {}), TOOLS, ["count_letter"], [(1, UNKNOWN_GIT)], False),
    ("prose-around-call", "Let me count.\n" + GOOD + "\nDone.", TOOLS, ["count_letter"], [], False),
    ("nested-opener", "<tool_call><tool_call>" + GOOD, TOOLS, [], [(0, NOT_JSON)], False),
]

# the policies differ only where a block is not valid JSON (or not closed)
VLLM_AS_TEXT = {
    "missing-brace",
    "trailing-comma",
    "single-quotes",
    "nan",
    "duplicate-key",
    "raw-newline",
    "empty-block",
    "cut-off",
    "mixed-json-error",
    "nested-opener",
}


@pytest.mark.parametrize("case", NATIVE_TABLE, ids=[c[0] for c in NATIVE_TABLE])
def test_native_per_block(case):
    _, text, tools, names, errors, final = case
    result = parse_turn(text, tools, "native", "per-block")
    assert [c.name for c in result.calls] == names
    assert [(e.block, e.error) for e in result.errors] == errors
    assert result.final is final
    assert result.returned_as_text is False


@pytest.mark.parametrize("case", NATIVE_TABLE, ids=[c[0] for c in NATIVE_TABLE])
def test_native_vllm(case):
    name, text, tools, names, errors, final = case
    result = parse_turn(text, tools, "native", "vllm")
    if name in VLLM_AS_TEXT:
        # one block that is not JSON and every call is dropped; the turn comes back as text
        assert result.calls == [] and result.final and result.returned_as_text
        assert result.answer == text.strip()
    else:
        assert [c.name for c in result.calls] == names and result.final is final
    assert [(e.block, e.error) for e in result.errors] == errors


@pytest.mark.parametrize("case", NATIVE_TABLE, ids=[c[0] for c in NATIVE_TABLE])
def test_every_check_is_reported_in_order(case):
    result = parse_turn(case[1], case[2])
    for b in result.blocks:
        assert [c.name for c in b.checks] == list(NATIVE_CHECKS)
        verdicts = [c.passed for c in b.checks]
        if b.error is None:
            assert verdicts == [True] * len(NATIVE_CHECKS)
        else:
            failed = verdicts.index(False)
            assert verdicts[:failed] == [True] * failed
            assert verdicts[failed + 1 :] == [None] * (len(verdicts) - failed - 1)
            assert b.checks[failed].error == b.error


def test_arguments_are_returned_as_written():
    result = parse_turn(GOOD, TOOLS)
    assert result.calls[0].arguments == {"word": "strawberry", "letter": "r"}
    assert result.blocks[0].text == '\n{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}\n'


def test_find_blocks_uses_both_regex_branches():
    found = find_blocks(GOOD + " then <tool_call>{cut")
    assert [(closed, inner) for inner, closed, *_ in found] == [
        (True, '\n{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}\n'),
        (False, "{cut"),
    ]


BARE = '{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}'


@pytest.mark.parametrize(
    "text, recover, names, final",
    [
        (BARE, False, [], True),
        (BARE, True, ["count_letter"], False),
        ("  \n" + BARE + "\nthat was the call", True, ["count_letter"], False),
        ('{"name": "git_commit", "arguments": {}}', True, [], True),
        ('Here: {"name": "count_letter", "arguments": {}}', True, [], True),
        ('{"name": "count_letter", "arguments": {"word": "x"', True, [], True),
    ],
)
def test_bare_json_recovery(text, recover, names, final):
    result = parse_turn(text, TOOLS, recover_bare=recover)
    assert [c.name for c in result.calls] == names and result.final is final


REACT_GOOD = 'Thought: count it\nAction: count_letter\nAction Input: {"word": "strawberry", "letter": "r"}'
REACT_TABLE = [
    ("valid", REACT_GOOD, ["count_letter"], [], False, None),
    ("stops-at-own-observation", REACT_GOOD + "\nObservation: 2\nThought: done", ["count_letter"], [], False, None),
    ("final", "Thought: I know\nFinal Answer: 3", [], [], True, "3"),
    ("final-multiline", "Final Answer: three\nr's in all", [], [], True, "three\nr's in all"),
    (
        "fenced",
        'Action: count_letter\nAction Input: ```json\n{"word": "strawberry", "letter": "r"}\n```',
        [],
        [REACT_FENCED],
        False,
        None,
    ),
    (
        "fenced-plain",
        'Action: count_letter\nAction Input: ```\n{"word": "s", "letter": "r"}\n```',
        [],
        [REACT_FENCED],
        False,
        None,
    ),
    (
        "unclosed-object",
        'Action: count_letter\nAction Input: {"word": "strawberry", "letter": "r"',
        [],
        [REACT_NOT_JSON],
        False,
        None,
    ),
    ("raw-newline", 'Action: tokenize\nAction Input: {"text": "a\nb"}', [], [RAW_NEWLINE], False, None),
    ("no-input", "Thought: hmm\nAction: count_letter", [], [REACT_NO_INPUT], False, None),
    ("neither", "Thought: I wonder.", [], [REACT_NO_ACTION], False, None),
    ("both", REACT_GOOD + "\nFinal Answer: 3", [], [REACT_BOTH], False, None),
    (
        "two-actions",
        REACT_GOOD + "\n" + REACT_GOOD,
        [],
        ["error: write one Action per reply; this reply has 2"],
        False,
        None,
    ),
    ("unknown-tool", 'Action: git_commit\nAction Input: {"message": "x"}', [], [UNKNOWN_GIT], False, None),
    ("input-not-object", 'Action: tokenize\nAction Input: "strawberry"', [], [REACT_INPUT_NOT_OBJECT], False, None),
    (
        "missing-required",
        'Action: count_letter\nAction Input: {"word": "strawberry"}',
        [],
        ["error: missing required argument 'letter' for count_letter"],
        False,
        None,
    ),
    (
        "extra",
        'Action: tokenize\nAction Input: {"text": "a", "lang": "en"}',
        [],
        ["error: tokenize has no argument 'lang'"],
        False,
        None,
    ),
    (
        "wrong-type",
        'Action: tokenize\nAction Input: {"text": 1}',
        [],
        ["error: argument 'text' of tokenize must be a string"],
        False,
        None,
    ),
]


@pytest.mark.parametrize("case", REACT_TABLE, ids=[c[0] for c in REACT_TABLE])
@pytest.mark.parametrize("policy", ["per-block", "vllm"])
def test_react(case, policy):
    _, text, names, errors, final, answer = case
    result = parse_turn(text, TOOLS, "react", policy)
    assert [c.name for c in result.calls] == names
    assert [e.error for e in result.errors] == errors
    assert result.final is final
    assert result.answer == answer


def test_unknown_style_and_policy_are_refused():
    with pytest.raises(
        BadInput, match="unknown call format 'xml'; the call formats are native, react, qwen3-coder, llama3.1"
    ):
        parse_turn(GOOD, TOOLS, "xml")
    with pytest.raises(BadInput, match="policy"):
        parse_turn(GOOD, TOOLS, "native", "lenient")


def test_broken_tool_schema_is_the_tools_fault_not_a_crash():
    broken = [
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": 12}}}},
        }
    ]
    result = parse_turn(call("f", {"x": 1}), broken)
    assert (
        result.errors[0].error
        == "error: the schema of f is not a valid JSON Schema, so its arguments cannot be checked"
    )


# -- where the name starts ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "tokens, style, expected",
    [
        (["<tool_call>", "\n", '{"', "name", '":', ' "', "count", "_letter", '",'], "native", 6),
        (['{"name": "', "tok", "enize"], "native", 1),
        (["Thought", ":", " count", "\n", "Action", ":", " count", "_letter"], "react", 6),
        (["The", " capital", " is", " Paris"], "native", None),
        (["<tool_call>", "\n", '{"name": "'], "native", None),  # cut off before the name
    ],
    ids=["native split marker", "marker in one token", "react", "prose", "cut before the name"],
)
def test_find_name_token(tokens, style, expected):
    from engine.core.call_formats import find_name_token

    assert find_name_token(tokens, style) == expected


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (10, None),
        (
            10.0,
            "error: argument 'n' of pick must be an integer",
        ),  # BFCL: type(10.0) is float; JSON Schema would accept it
        (True, "error: argument 'n' of pick must be an integer"),
        ("10", "error: argument 'n' of pick must be an integer"),
    ],
)
def test_an_integer_parameter_takes_an_int_as_bfcl_checks_it(value, error):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "pick",
                "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            },
        }
    ]
    turn = '<tool_call>\n{"name": "pick", "arguments": {"n": ' + json.dumps(value) + "}}\n</tool_call>"
    result = parse_turn(turn, tools, "native")
    assert [e.error for e in result.errors] == ([error] if error else [])
