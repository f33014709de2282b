"""Qwen3-Coder, the call that is not JSON: its template's price, its two readings, vLLM's own cases, its grammar."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.call_formats import get_format, parse_turn
from engine.core.call_formats.qwen3_coder import read_value
from engine.settings import LESSONS

STRAWBERRY = json.loads((LESSONS / "tools" / "strawberry.json").read_text())
CODER = get_format("qwen3-coder")
CALL = CODER.write_call("count_letter", {"word": "strawberry", "letter": "r"})
VLLM = "vllm tests/tool_parsers/test_qwen3coder_tool_parser.py"


def tool(name: str, properties: dict, required: tuple[str, ...] = ()) -> dict:
    parameters = {"type": "object", "properties": properties, "required": list(required)}
    return {"type": "function", "function": {"name": name, "description": "", "parameters": parameters}}


# the peer's own tools (WEATHER_PARAMS, AREA_PARAMS and the type-conversion tools of its test file)
WEATHER = tool(
    "get_current_weather",
    {"city": {"type": "string"}, "state": {"type": "string"}, "unit": {"type": "string"}},
    ("city", "state"),
)
AREA = tool(
    "calculate_area", {"shape": {"type": "string"}, "dimensions": {"type": "object"}, "precision": {"type": "integer"}}
)
TYPES = tool(
    "test_types",
    {
        "int_param": {"type": "integer"},
        "float_param": {"type": "number"},  # the peer's "float" is no JSON Schema type: see the test below
        "bool_param": {"type": "boolean"},
        "str_param": {"type": "string"},
        "obj_param": {"type": "object"},
    },
)
ANYOF = tool(
    "test_anyof",
    {
        "anyof_int": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
        "anyof_str": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "anyof_array": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
        "anyof_obj": {"anyOf": [{"type": "object"}, {"type": "null"}]},
        "type_as_array": {"type": ["integer", "null"]},
        "multi_non_null": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
    },
)
PEER_TOOLS = [WEATHER, AREA, TYPES, ANYOF]


def weather(city: str, state: str, unit: str | None = None) -> str:
    unit_part = f"<parameter=unit>\n{unit}\n</parameter>\n" if unit else ""
    return (
        f"<tool_call>\n<function=get_current_weather>\n<parameter=city>\n{city}\n</parameter>\n"
        f"<parameter=state>\n{state}\n</parameter>\n{unit_part}</function>\n</tool_call>"
    )


DALLAS = {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}
AREA_CALL = (
    "<tool_call>\n<function=calculate_area>\n<parameter=shape>\n{shape}\n</parameter>\n<parameter=dimensions>\n"
    "{dimensions}\n</parameter>\n<parameter=precision>\n{precision}\n</parameter>\n</function>\n</tool_call>"
)

# (the peer's test and case, the turn, the calls its test expects)
PEER_CASES = [
    (f"{VLLM}::test_extract_tool_calls_no_tools", "This is a test response without any tool calls", []),
    (
        f"{VLLM}::test_extract_tool_calls[single_tool]",
        weather("Dallas", "TX", "fahrenheit"),
        [("get_current_weather", DALLAS)],
    ),
    (
        f"{VLLM}::test_extract_tool_calls[single_tool_with_content]",
        "Sure! Let me check the weather for you." + weather("Dallas", "TX", "fahrenheit"),
        [("get_current_weather", DALLAS)],
    ),
    (
        f"{VLLM}::test_extract_tool_calls[single_tool_multiline_param]",
        AREA_CALL.format(shape="rectangle", dimensions='{"width": 10, \n "height": 20}', precision=2),
        [("calculate_area", {"shape": "rectangle", "dimensions": {"width": 10, "height": 20}, "precision": 2})],
    ),
    (
        f"{VLLM}::test_extract_tool_calls[parallel_tools]",
        weather("Dallas", "TX", "fahrenheit") + "\n" + weather("Orlando", "FL", "fahrenheit"),
        [("get_current_weather", DALLAS), ("get_current_weather", {**DALLAS, "city": "Orlando", "state": "FL"})],
    ),
    (
        f"{VLLM}::test_extract_tool_calls[tool_with_typed_params]",
        "Let me calculate that area for you."
        + AREA_CALL.format(shape="circle", dimensions='{"radius": 15.5}', precision=3),
        [("calculate_area", {"shape": "circle", "dimensions": {"radius": 15.5}, "precision": 3})],
    ),
    (
        f"{VLLM}::test_extract_tool_calls_fallback_no_tags",
        "<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>\n</function>",
        [("get_current_weather", {"city": "Dallas", "state": "TX"})],
    ),
    (
        f"{VLLM}::test_extract_tool_calls_type_conversion",
        "<tool_call>\n<function=test_types>\n<parameter=int_param>\n42\n</parameter>\n<parameter=float_param>\n3.14\n"
        "</parameter>\n<parameter=bool_param>\ntrue\n</parameter>\n<parameter=str_param>\nhello world\n</parameter>\n"
        '<parameter=obj_param>\n{"key": "value"}\n</parameter>\n</function>\n</tool_call>',
        [
            (
                "test_types",
                {
                    "int_param": 42,
                    "float_param": 3.14,
                    "bool_param": True,
                    "str_param": "hello world",
                    "obj_param": {"key": "value"},
                },
            )
        ],
    ),
    (
        f"{VLLM}::test_extract_tool_calls_anyof_type_conversion",
        "<tool_call>\n<function=test_anyof>\n<parameter=anyof_int>\n5\n</parameter>\n<parameter=anyof_str>\nhello\n"
        '</parameter>\n<parameter=anyof_array>\n["a", "b", "c"]\n</parameter>\n<parameter=anyof_obj>\n{"key": "value"}\n'
        "</parameter>\n<parameter=type_as_array>\n42\n</parameter>\n<parameter=multi_non_null>\nsome text\n</parameter>\n"
        "</function>\n</tool_call>",
        [
            (
                "test_anyof",
                {
                    "anyof_int": 5,
                    "anyof_str": "hello",
                    "anyof_array": ["a", "b", "c"],
                    "anyof_obj": {"key": "value"},
                    "type_as_array": 42,
                    "multi_non_null": "some text",
                },
            )
        ],
    ),
    (
        f"{VLLM}::test_extract_tool_calls_missing_closing_parameter_tag",
        "Let me check the weather for you:\n<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n"
        "<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>",
        [("get_current_weather", DALLAS)],
    ),
]

# the peer's rows the strict reading does not run as the peer does, and what it says instead
STRICT_DIFFERS = {
    f"{VLLM}::test_extract_tool_calls_fallback_no_tags": "no <tool_call>: a final answer",
    f"{VLLM}::test_extract_tool_calls_missing_closing_parameter_tag": "city's value runs to the first </parameter>",
}


@pytest.mark.parametrize(("source", "turn", "expected"), PEER_CASES, ids=[c[0].split("::")[-1] for c in PEER_CASES])
def test_the_server_policy_reads_each_of_vllm_s_cases_as_its_test_expects(source, turn, expected):
    result = parse_turn(turn, PEER_TOOLS, "qwen3-coder", "server")
    assert [(c.name, c.arguments) for c in result.calls] == expected, source
    assert result.errors == []


@pytest.mark.parametrize(("source", "turn", "expected"), PEER_CASES, ids=[c[0].split("::")[-1] for c in PEER_CASES])
def test_the_strict_policy_differs_from_vllm_only_where_the_table_says(source, turn, expected):
    result = parse_turn(turn, PEER_TOOLS, "qwen3-coder", "per-block")
    found = [(c.name, c.arguments) for c in result.calls]
    assert (found != expected or bool(result.errors)) == (source in STRICT_DIFFERS), source


def test_the_written_call_is_the_template_s_layout_and_reads_back_under_both_policies():
    assert CALL == (
        "<tool_call>\n<function=count_letter>\n<parameter=word>\nstrawberry\n</parameter>\n"
        "<parameter=letter>\nr\n</parameter>\n</function>\n</tool_call>"
    )
    for policy in CODER.policies:
        result = parse_turn(CALL, STRAWBERRY, "qwen3-coder", policy)
        assert [(c.name, c.arguments) for c in result.calls] == [
            ("count_letter", {"word": "strawberry", "letter": "r"})
        ]


def _body(inside: str) -> str:
    return f"<tool_call>\n{inside}\n</tool_call>"


WORD = "<parameter=word>\nstrawberry\n</parameter>\n"
LETTER = "<parameter=letter>\nr\n</parameter>\n"

# (case, turn, calls run, the first error) under the strict policy
STRICT_TABLE = [
    ("the call", CALL, 1, None),
    ("reasoning before it", "I will count.\n" + CALL, 1, None),
    ("two calls", CALL + "\n" + CALL, 2, None),
    ("prose only", "There are three r's.", 0, None),
    ("cut off", CALL[: -len("</tool_call>")], 0, "error: the call is not closed with </tool_call>; was the reply cut off?"),
    ("JSON inside", '<tool_call>\n{"name": "count_letter", "arguments": {}}\n</tool_call>', 0, "error: the call does not start with <function=NAME> inside <tool_call>"),
    ("no </function>", _body(f"<function=count_letter>\n{WORD}{LETTER}"), 0, "error: the call does not end with </function> before </tool_call>"),
    ("a value not closed", _body("<function=count_letter>\n<parameter=word>\nstrawberry\n</function>"), 0, "error: <parameter=word> is not closed with </parameter>"),
    ("text between", _body(f"<function=count_letter>\n{WORD}and\n{LETTER}</function>"), 0, "error: text outside a parameter: inside <function=…> only <parameter=NAME>…</parameter> blocks may stand"),
    ("a name twice", _body(f"<function=count_letter>\n{WORD}{WORD}{LETTER}</function>"), 0, "error: the parameter word is given twice"),
    ("a space in the name", _body(f"<function=count letter>\n{WORD}{LETTER}</function>"), 0, "error: the function's name is empty or holds a space, a quote or a bracket"),
    ("an unknown tool", _body(f"<function=count_letters>\n{WORD}{LETTER}</function>"), 0, "error: unknown tool 'count_letters'; the tools are count_letter, tokenize"),
    ("a missing argument", _body(f"<function=count_letter>\n{WORD}</function>"), 0, "error: missing required argument 'letter' for count_letter"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "turn", "calls", "error"), STRICT_TABLE, ids=[c[0] for c in STRICT_TABLE])
def test_the_strict_reading_of_good_and_bad_turns(case, turn, calls, error):
    result = parse_turn(turn, STRAWBERRY, "qwen3-coder", "per-block")
    assert len(result.calls) == calls, case
    assert (result.errors[0].error if result.errors else None) == error, case
    assert result.final == (calls == 0 and error is None)


# (case, turn, calls run, handed back as text) under the server policy
SERVER_TABLE = [
    ("cut off after </function>", CALL[: -len("</tool_call>")], 1, False),
    ("cut off inside the last value", CALL.split("\n</parameter>\n</function>")[0], 1, False),
    ("no <tool_call> around it", CALL.removeprefix("<tool_call>\n"), 1, False),
    ("JSON inside", '<tool_call>\n{"name": "count_letter", "arguments": {}}\n</tool_call>', 0, False),
    ("a bad name only", _body(f"<function={{name}}>\n{WORD}{LETTER}</function>"), 0, True),
]


@pytest.mark.parametrize(("case", "turn", "calls", "as_text"), SERVER_TABLE, ids=[c[0] for c in SERVER_TABLE])
def test_the_server_reading_of_turns_the_strict_one_refuses(case, turn, calls, as_text):
    result = parse_turn(turn, STRAWBERRY, "qwen3-coder", "server")
    assert len(result.calls) == calls, case
    assert result.returned_as_text == as_text, case
    assert parse_turn(turn, STRAWBERRY, "qwen3-coder", "per-block").calls == [], case


# (raw value, schema, strict reading, vLLM's reading)
VALUES = [
    ("42", {"type": "integer"}, 42, 42),
    (" 42", {"type": "integer"}, 42, 42),
    ("4_2", {"type": "integer"}, "4_2", 42),  # Python's int() reads an underscore; the strict reading does not
    ("ten", {"type": "integer"}, "ten", "ten"),
    ("10.0", {"type": "number"}, 10, 10),
    ("2.5", {"type": "number"}, 2.5, 2.5),
    ("nan", {"type": "number"}, "nan", "nan"),
    ("True", {"type": "boolean"}, True, True),  # what the template's `| string` writes for Python's True
    ("yes", {"type": "boolean"}, "yes", False),  # vLLM makes any other word false
    ("null", {"type": "integer"}, None, None),
    ("null", {"type": "string"}, "null", "null"),
    ("null", {"anyOf": [{"type": "string"}, {"type": "null"}]}, None, None),
    ('{"a": 1}', {"type": "object"}, {"a": 1}, {"a": 1}),
    ("{'a': 1}", {"type": "object"}, {"a": 1}, {"a": 1}),  # the template's own history: Python's str of a dict
    ("(1, 2)", {"type": "array"}, [1, 2], [1, 2]),
    ("{1, 2}", {"type": "array"}, "{1, 2}", "{1, 2}"),  # a Python set is not JSON: the text stays
    ("strawberry", None, "strawberry", "strawberry"),  # a parameter the schema does not name is text
]


@pytest.mark.parametrize(("raw", "schema", "strict", "lenient"), VALUES)
def test_a_value_reads_as_its_schema_type(raw, schema, strict, lenient):
    assert read_value(raw, schema, lenient=False) == strict
    assert read_value(raw, schema, lenient=True) == lenient


def test_hostile_values_are_read_quickly_and_never_crash():
    deep = "[" * 5000 + "]" * 5000
    started = time.perf_counter()
    assert read_value(deep, {"type": "array"}, lenient=True) == deep  # too deep for json and for ast: text
    assert read_value("9" * 50_000, {"type": "integer"}, lenient=True) == "9" * 50_000  # past int()'s digit limit
    huge = _body(
        "<function=count_letter>\n" + "<parameter=word>\n" + "x" * 200_000 + "\n</parameter>\n" * 3 + "</function>"
    )
    for policy in CODER.policies:
        parse_turn(huge * 20, STRAWBERRY, "qwen3-coder", policy)
    assert time.perf_counter() - started < 20


names = st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True)
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="<"), max_size=40)
values = st.one_of(texts, st.integers(-(10**12), 10**12), st.booleans(), st.lists(st.integers(-99, 99), max_size=4))
TYPE_OF = {str: "string", int: "integer", bool: "boolean", list: "array"}


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(names, values, min_size=1, max_size=5))
def test_any_call_the_template_writes_reads_back_strictly(arguments):
    # a string value is written as is: its own newlines at the edges would be read as the layout's
    arguments = {k: (v.strip("\n") if isinstance(v, str) else v) for k, v in arguments.items()}
    properties = {k: {"type": TYPE_OF[type(v)]} for k, v in arguments.items()}
    tools = [tool("f", properties, tuple(arguments))]
    result = parse_turn(CODER.write_call("f", arguments), tools, "qwen3-coder", "per-block")
    assert [(c.name, c.arguments) for c in result.calls] == [("f", arguments)], result.errors


def test_the_grammar_holds_a_call_to_the_xml_layout():
    from engine.constrain.families import allowed_at_name, inspect_family_mask

    at_name = allowed_at_name("qwen3-coder", STRAWBERRY)
    assert at_name.constrained and at_name.vocab == 151_669
    assert {"count", "token"} <= set(at_name.sample) and at_name.allowed == 8
    inside = inspect_family_mask("qwen3-coder", STRAWBERRY, "<tool_call>\n<function=count_letter>\n")
    assert inside.constrained and "<" in inside.sample and '{"' not in inside.sample
    free = inspect_family_mask("qwen3-coder", STRAWBERRY, "Let me count.")
    assert not free.constrained and free.opener == "<tool_call>"
    with pytest.raises(Exception, match="the grammar refuses"):
        inspect_family_mask("qwen3-coder", STRAWBERRY, '<tool_call>\n{"name"')


def test_the_template_s_tool_spans_cover_each_function_element():
    from engine.core.call_formats import render_tokens

    rendering = render_tokens("qwen3-coder", [{"role": "user", "content": "How many r?"}], STRAWBERRY)
    tools = [s for s in rendering.spans if s.kind == "tool"]
    assert [s.label for s in tools] == ["tool count_letter", "tool tokenize"]
    first = rendering.text[tools[0].start : tools[0].end]
    assert first.startswith("\n<function>\n<name>count_letter</name>") and first.endswith("</function>")
    assert sum(s.tokens for s in rendering.spans) == rendering.count


def test_a_type_json_schema_does_not_know_is_reported_not_raised():
    # vLLM's own test tool says "type": "float"; jsonschema knows no such type, and the check says so
    floats = [tool("test_types", {"float_param": {"type": "float"}})]
    turn = _body("<function=test_types>\n<parameter=float_param>\n3.14\n</parameter>\n</function>")
    for policy in CODER.policies:
        result = parse_turn(turn, floats, "qwen3-coder", policy)
        assert result.calls == []
        assert result.errors[0].error == (
            "error: the schema of test_types is not a valid JSON Schema, so its arguments cannot be checked"
        )
