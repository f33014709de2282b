"""Tool definitions a user pastes: find_tool_problems never raises, and what it passes is usable.

Arbitrary JSON values and tool-shaped values with broken parts go in; a list of sentences
comes out. When the list is empty, the tools are usable everywhere they go: every name is
valid and unique, every schema passes jsonschema's own check, and the parsers run over
them on any text without an exception.
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from engine.core.call_formats import parse_turn
from engine.core.tooldefs import (
    NAME_PATTERN,
    TOOL_SETS,
    check_tool_definitions,
    find_tool_problems,
    load_tool_set,
)

PROPERTY = settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.too_slow], derandomize=True)

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=20,
)
names = st.one_of(st.sampled_from(["count_letter", "read_file", "a", "a-b_1", "", "has space", "x" * 65]), json_values)
type_words = st.sampled_from(["object", "string", "integer", "number", "boolean", "array", "null", "strin", 5, None])
schemas = st.recursive(
    st.fixed_dictionaries({"type": type_words}),
    lambda inner: st.one_of(
        st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(st.text(max_size=5), inner, max_size=3)},
            optional={
                "required": st.one_of(st.lists(st.text(max_size=5), max_size=3), json_values),
                "additionalProperties": st.booleans(),
            },
        ),
        st.fixed_dictionaries({"type": st.just("array"), "items": inner}),
        st.fixed_dictionaries(
            {"type": st.just("string")},
            optional={
                "pattern": st.sampled_from(["^[a-z]+$", "(a+)+$", "(?=a)", "(", "\\d{2,3}"]),
                "enum": st.lists(scalars, max_size=3),
            },
        ),
        st.fixed_dictionaries(
            {"$ref": st.sampled_from(["#", "#/properties", "#/$defs/nope", "http://127.0.0.1:9/s.json"])}
        ),
        json_values,
    ),
    max_leaves=8,
)
tools = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {
                "type": st.sampled_from(["function", "tool", 1]),
                "function": st.fixed_dictionaries(
                    {"name": names},
                    optional={"description": st.one_of(st.text(max_size=20), json_values), "parameters": schemas},
                ),
            },
        ),
        json_values,
    ),
    max_size=5,
)
turn_text = st.lists(
    st.sampled_from(
        [
            "<tool_call>",
            "</tool_call>",
            '{"name": "a", "arguments": {}}',
            '{"name": "count_letter", "arguments": ',
            '{"x": 1}',
            "}",
            "Action: a\nAction Input: {}",
            "x",
        ]
    ),
    max_size=8,
).map("".join)


def assert_usable(data) -> None:
    """What an empty problem list promises."""
    assert check_tool_definitions(data) is data
    seen = set()
    for tool in data:
        fn = tool["function"]
        assert NAME_PATTERN.match(fn["name"]) and fn["name"] not in seen
        seen.add(fn["name"])
        params = fn.get("parameters", {"type": "object"})
        Draft202012Validator.check_schema(params)
        assert params.get("type") == "object"


@PROPERTY
@given(json_values)
def test_any_json_value_gives_a_list_of_sentences(data):
    problems = find_tool_problems(data)
    assert isinstance(problems, list) and all(isinstance(p, str) and p for p in problems)


@PROPERTY
@given(tools, turn_text)
def test_tool_shaped_values_never_crash_and_what_passes_is_usable(data, text):
    started = time.perf_counter()
    problems = find_tool_problems(data)
    assert time.perf_counter() - started < 1.0
    assert isinstance(problems, list) and all(isinstance(p, str) for p in problems)
    if not problems:
        assert_usable(data)
    # the parsers take the tools as they are, checked or not, and never raise
    usable = data if isinstance(data, list) else []
    for style, policy in [("native", "per-block"), ("native", "vllm"), ("react", "per-block")]:
        result = parse_turn(text, usable, style, policy)
        assert isinstance(result.calls, list) and isinstance(result.errors, list)


@PROPERTY
@given(st.one_of(json_values.map(json.dumps), tools.map(json.dumps), st.text(max_size=200)))
def test_pasted_text_is_checked_when_it_is_json_and_refused_with_the_json_error_when_not(text):
    from ui.tool_editor import read_tools

    tools, problems = read_tools(text)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        assert tools is None and len(problems) == 1 and problems[0].startswith(("Not valid JSON", "Not usable JSON"))
        return
    assert problems == find_tool_problems(data)
    assert (tools is None) == bool(problems)


def fn(name="a", **more) -> dict:
    return {"type": "function", "function": {"name": name, **more}}


DEEP = {"type": "object"}
for _ in range(400):
    DEEP = {"type": "object", "properties": {"a": DEEP}}


@pytest.mark.parametrize(
    "data, expected",
    [
        ([{"type": "function", "function": {"description": "no name"}}], ["tool 1: it has no name"]),
        ([fn(name="")], ["tool 1: it has no name"]),
        ([fn(name=7)], ["tool 1: it has no name"]),
        ([fn("a"), fn("a")], ["tool 2: the name 'a' is used twice"]),
        (
            [fn("a"), fn("b"), fn("a"), fn("b")],
            ["tool 3: the name 'a' is used twice", "tool 4: the name 'b' is used twice"],
        ),
        (
            [fn(parameters={"type": "object", "properties": {"x": {"type": "strin"}}})],
            ["tool 'a': parameters is not a valid JSON Schema: 'strin' is not valid under any of the given schemas"],
        ),
        (
            [fn(parameters={"type": "object", "required": "x"})],
            ["tool 'a': parameters is not a valid JSON Schema: 'x' is not of type 'array'"],
        ),
        (
            [fn(parameters={"type": "object", "properties": {"x": {"type": "string", "pattern": "("}}})],
            ["tool 'a': parameters is not a valid JSON Schema: '(' is not a 'regex'"],
        ),
        (
            [fn(parameters={"type": "object", "properties": {"x": {"type": "string", "pattern": "^(?!a)"}}})],
            ["tool 'a': the pattern '^(?!a)' uses syntax RE2 cannot run (lookaround or a backreference)"],
        ),
        (
            [fn(parameters={"type": "object", "properties": {"x": {"$ref": "#/$defs/nope"}}})],
            ["tool 'a': $ref '#/$defs/nope' points to nothing in this schema"],
        ),
        (
            [fn(parameters={"type": "object", "properties": {"x": {"$ref": "https://example.org/s.json"}}})],
            ["tool 'a': $ref 'https://example.org/s.json' points to another document; write that schema inline"],
        ),
        ([fn(parameters=DEEP)], ["tool 'a': it nests deeper than 16 levels; flatten the parameters"]),
        ([fn(parameters={"type": "array"})], ['tool \'a\': parameters must have "type": "object"']),
        ({"tools": []}, ['tools must be a JSON list of definitions: [{"type": "function", "function": {...}}, ...]']),
        ([[]], ['tool 1: write it as {"type": "function", "function": {"name": ..., "parameters": ...}}']),
    ],
)
def test_each_problem_is_named(data, expected):
    assert find_tool_problems(data) == expected


@pytest.mark.parametrize("name", TOOL_SETS)
def test_the_shipped_tool_sets_have_no_problems(name):
    assert find_tool_problems(load_tool_set(name)) == []
