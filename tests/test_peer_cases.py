"""The tool-parser test cases of vLLM and SGLang, as rows: the turn, the calls the peer's test expects, and where it came from.

Each row is read under the family's `server` policy (what the servers' parsers accept) and must
give the calls the peer's own test asserts, in order, with the same arguments. The tools are
the peers' tool names with schemas that accept any arguments, so the rows test finding and
reading calls, not the argument checks. Where a row's verdict is ours and not the peer's, the
row says why (DIFFERENCES); the strict policy's verdict on each row is in STRICT_DIFFERS.
"""

from __future__ import annotations

import json

import pytest

from engine.core.call_formats import get_format, parse_turn

VLLM_LLAMA = "vllm tests/tool_parsers/test_llama3_json_tool_parser.py"
VLLM_V3 = "vllm tests/tool_parsers/test_deepseekv3_tool_parser.py (ToolParserTestConfig)"
VLLM_V31 = "vllm tests/tool_parsers/test_deepseekv31_tool_parser.py"
SGLANG_MISTRAL = "sglang test/srt/test_function_call_parser.py::TestMistralDetector"
VLLM_OPENAI = "vllm tests/tool_parsers/test_openai_tool_parser.py"

B, E = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>", "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
SEP, ONE_BEGIN, ONE_END = "<｜tool▁sep｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"


def v3(name: str, arguments: str) -> str:
    """One call in DeepSeek-V3's layout, as the peer's test writes it."""
    return f"function{SEP}{name}\n```json\n{arguments}\n```"


def harmony(*messages: tuple[str, str, str | None, str | None]) -> str:
    """An assistant's turn of (channel, content, recipient, content type) messages, rendered by openai-harmony as
    the peer's test renders them, from after the prompt's <|start|>assistant."""
    from openai_harmony import Message, Role

    from engine.core.call_formats.gpt_oss import load_harmony

    encoding, ids = load_harmony(), []
    for channel, content, recipient, content_type in messages:
        message = Message.from_role_and_content(Role.ASSISTANT, content).with_channel(channel)
        message = message.with_recipient(recipient) if recipient else message
        message = message.with_content_type(content_type) if content_type else message
        ids += encoding.render(message)
    return encoding.decode_utf8(ids).removeprefix("<|start|>assistant")


THINK = ("analysis", 'User asks: "What is the weather in Tokyo?" We need to use get_current_weather tool.', None, None)
TOKYO = '{"location": "Tokyo"}'

Q1 = '{"name": "searchTool", "parameters": {"query": "test1"}}'
Q0 = '{"name": "getOpenIncidentsTool", "parameters": {}}'
Q2 = '{"name": "searchTool", "parameters": {"query": "test2"}}'
THREE = [("searchTool", {"query": "test1"}), ("getOpenIncidentsTool", {}), ("searchTool", {"query": "test2"})]
DECISION = (
    "```\nTOOL: Access a weather API or service\nOBSERVATION: Retrieve the current weather data for the top 5 "
    "populated cities in the US\nANSWER: The weather in the top 5 populated cities in the US is as follows: "
    "[City Name] - [Weather Conditions] - [Temperature]\n```"
)

# (peer file::test, family, turn, the calls the peer's test expects)
CASES = [
    (
        f"{VLLM_LLAMA}::test_extract_tool_calls_simple",
        "llama3.1",
        'Here is the result: {"name": "getOpenIncidentsTool", "parameters": {}} Would you like to know more?',
        [("getOpenIncidentsTool", {})],
    ),
    (
        f"{VLLM_LLAMA}::test_extract_tool_calls_with_arguments",
        "llama3.1",
        '{"name": "searchTool", "parameters": {"query": "test query", "limit": 10}}',
        [("searchTool", {"query": "test query", "limit": 10})],
    ),
    (f"{VLLM_LLAMA}::test_extract_tool_calls_no_json", "llama3.1", "This is just some text without any tool calls", []),
    (
        f"{VLLM_LLAMA}::test_extract_tool_calls_invalid_json",
        "llama3.1",
        '{"name": "invalidTool", "parameters": {invalid json}',
        [],
    ),
    (
        f"{VLLM_LLAMA}::test_extract_tool_calls_with_arguments_key",
        "llama3.1",
        '{"name": "searchTool", "arguments": {"query": "test"}}',
        [("searchTool", {"query": "test"})],
    ),
    (f"{VLLM_LLAMA}::test_extract_tool_calls_multiple_json", "llama3.1", f"{Q1}; {Q0}; {Q2}", THREE),
    (f"{VLLM_LLAMA}::test_extract_tool_calls_multiple_json_with_whitespace", "llama3.1", f"{Q1} ; {Q0} ; {Q2}", THREE),
    (
        f"{VLLM_LLAMA}::test_extract_tool_calls_multiple_json_with_surrounding_text",
        "llama3.1",
        f"Here are the results: {Q1}; {Q0}; {Q2} Would you like to know more?",
        THREE,
    ),
    (
        f"{VLLM_LLAMA}::test_extract_tool_calls_deeply_nested_json",
        "llama3.1",
        '{"name": "complexTool", "parameters": {"level1": {"level2": {"level3": {"level4": {"value": "deep"}}}}}}',
        [("complexTool", {"level1": {"level2": {"level3": {"level4": {"value": "deep"}}}}})],
    ),
    (
        f"{VLLM_LLAMA}::test_extract_tool_calls_multiple_with_deep_nesting",
        "llama3.1",
        '{"name": "simpleTool", "parameters": {"value": "test"}}; '
        '{"name": "complexTool", "parameters": {"config": {"database": {"connection": {"pool": {"size": 10}}}}}}',
        [
            ("simpleTool", {"value": "test"}),
            ("complexTool", {"config": {"database": {"connection": {"pool": {"size": 10}}}}}),
        ],
    ),
    (
        f"{VLLM_LLAMA}::test_extract_tool_calls_with_quotes_and_brackets_in_string",
        "llama3.1",
        '{"name": "searchTool", "parameters": {"query": "test {value} [complex]","nested": {"inner": "more {brackets}"}}}',
        [("searchTool", {"query": "test {value} [complex]", "nested": {"inner": "more {brackets}"}})],
    ),
    (
        f"{VLLM_LLAMA}::test_extract_tool_calls_with_escaped_quotes_in_nested_json",
        "llama3.1",
        '{"name": "parserTool", "parameters": {"text": "He said \\"Hello {world}\\""}}',
        [("parserTool", {"text": 'He said "Hello {world}"'})],
    ),
    (f"{VLLM_LLAMA}::test_extract_tool_calls_missing_name_key", "llama3.1", '{"parameters": {}}', []),
    (
        f"{VLLM_LLAMA}::test_extract_tool_calls_missing_parameters_and_arguments_key",
        "llama3.1",
        '{"name": "toolWithoutParams"}',
        [],
    ),
    (
        f"{VLLM_LLAMA}::test_extract_tool_calls_brace_in_trailing_text",
        "llama3.1",
        '{"name": "searchTool", "parameters": {"query": "test"}} I used {searchTool} for this.',
        [("searchTool", {"query": "test"})],
    ),
    (
        f"{VLLM_LLAMA}::test_extract_tool_calls_json_fragment_in_trailing_text",
        "llama3.1",
        '{"name": "searchTool", "parameters": {"query": "test"}} The arguments I passed were {"query": "test"}',
        [("searchTool", {"query": "test"})],
    ),
    *[
        (
            f"{VLLM_LLAMA}::test_extract_tool_calls_streaming_parallel_separators[{sep!r}] (read whole)",
            "llama3.1",
            Q1 + sep + Q0,
            [("searchTool", {"query": "test1"}), ("getOpenIncidentsTool", {})],
        )
        for sep in ("; ", ";", ";\n", "\n")
    ],
    (f"{VLLM_V3}::no_tool_calls_output", "deepseek-v3", "How can I help you today? I can check weather for you.", []),
    (
        f"{VLLM_V3}::single_tool_call_output",
        "deepseek-v3",
        B + v3("get_weather", '{"city": "Tokyo", "unit": "celsius"}') + E,
        [("get_weather", {"city": "Tokyo", "unit": "celsius"})],
    ),
    (
        f"{VLLM_V3}::parallel_tool_calls_output",
        "deepseek-v3",
        B
        + v3("get_weather", '{"city": "Tokyo", "unit": "celsius"}')
        + ONE_END
        + ONE_BEGIN
        + v3("search_hotels", '{"location": "Tokyo", "check_in": "2025-01-15"}')
        + E,
        [
            ("get_weather", {"city": "Tokyo", "unit": "celsius"}),
            ("search_hotels", {"location": "Tokyo", "check_in": "2025-01-15"}),
        ],
    ),
    (
        f"{VLLM_V3}::various_data_types_output",
        "deepseek-v3",
        B
        + v3(
            "test_function",
            '{"string_field": "hello", "int_field": 42, "float_field": 3.14, "bool_field": true, '
            '"null_field": null, "array_field": ["a", "b", "c"], "object_field": {"nested": "value"}, "empty_array": [], '
            '"empty_object": {}}',
        )
        + E,
        [
            (
                "test_function",
                {
                    "string_field": "hello",
                    "int_field": 42,
                    "float_field": 3.14,
                    "bool_field": True,
                    "null_field": None,
                    "array_field": ["a", "b", "c"],
                    "object_field": {"nested": "value"},
                    "empty_array": [],
                    "empty_object": {},
                },
            )
        ],
    ),
    (
        f"{VLLM_V3}::empty_arguments_output",
        "deepseek-v3",
        B + v3("get_current_time", "{}") + E,
        [("get_current_time", {})],
    ),
    (
        f"{VLLM_V3}::surrounding_text_output",
        "deepseek-v3",
        "Let me check the weather for you." + B + v3("get_weather", '{"city": "Paris"}') + E,
        [("get_weather", {"city": "Paris"})],
    ),
    (
        f"{VLLM_V3}::escaped_strings_output",
        "deepseek-v3",
        B
        + v3(
            "send_message", '{"text": "He said \\"hello\\"", "path": "C:\\\\Users\\\\file", "newline": "line1\\nline2"}'
        )
        + E,
        [("send_message", {"text": 'He said "hello"', "path": "C:\\Users\\file", "newline": "line1\nline2"})],
    ),
    (f"{VLLM_V3}::malformed_input_outputs[0]", "deepseek-v3", B + v3("get_weather", '{"city": "Tokyo"') + E, []),
    (
        f"{VLLM_V3}::malformed_input_outputs[1]",
        "deepseek-v3",
        "<｜tool▁calls▁begin｜>" + v3("get_weather", '{"city": "Tokyo"}') + "<｜tool▁calls▁end｜>",
        [],
    ),
    (
        f"{VLLM_V31}::test_extract_tool_calls_with_tool",
        "deepseek-v3.1",
        "normal text" + B + "foo" + SEP + '{"x":1}' + E,
        [("foo", {"x": 1})],
    ),
    (
        f"{VLLM_V31}::test_extract_tool_calls_with_multiple_tools",
        "deepseek-v3.1",
        "some prefix text"
        + B
        + "foo"
        + SEP
        + '{"x":1}'
        + ONE_END
        + ONE_BEGIN
        + "bar"
        + SEP
        + '{"y":2}'
        + E
        + " some suffix text",
        [("foo", {"x": 1}), ("bar", {"y": 2})],
    ),
    (
        f"{VLLM_V31}::test_extract_tool_calls_unparsable_block[cut off]",
        "deepseek-v3.1",
        "Let me look that up.<｜tool▁calls▁begin｜>get_weather",
        [],
    ),
    (
        f"{VLLM_V31}::test_extract_tool_calls_unparsable_block[no call markers]",
        "deepseek-v3.1",
        '<｜tool▁calls▁begin｜>foo<｜tool▁sep｜>{"x":1}<｜tool▁calls▁end｜>',
        [],
    ),
    (
        f"{SGLANG_MISTRAL}::test_detect_and_parse_with_nested_brackets_in_content",
        "mistral",
        '[TOOL_CALLS] [{"name":"make_next_step_decision", "arguments":{"decision":"","content":'
        + json.dumps(DECISION)
        + "}}]",
        [("make_next_step_decision", {"decision": "", "content": DECISION})],
    ),
    (
        f"{SGLANG_MISTRAL}::test_detect_and_parse_simple_case",
        "mistral",
        '[TOOL_CALLS] [{"name":"make_next_step_decision", "arguments":{"decision":"TOOL", "content":"Use weather API"}}]',
        [("make_next_step_decision", {"decision": "TOOL", "content": "Use weather API"})],
    ),
    (
        f"{SGLANG_MISTRAL}::test_detect_and_parse_no_tool_calls",
        "mistral",
        "This is just normal text without any tool calls.",
        [],
    ),
    (
        f"{SGLANG_MISTRAL}::test_detect_and_parse_with_text_before_tool_call",
        "mistral",
        'Here is some text before the tool call: [TOOL_CALLS] [{"name":"make_next_step_decision", '
        '"arguments":{"decision":"ANSWER", "content":"The answer is 42"}}]',
        [("make_next_step_decision", {"decision": "ANSWER", "content": "The answer is 42"})],
    ),
]

CASES += [
    (
        f"{VLLM_OPENAI}::test_extract_tool_calls_no_tools",
        "gpt-oss",
        harmony(("final", "This is a test", None, None)),
        [],
    ),
    *(
        (
            f"{VLLM_OPENAI}::test_extract_tool_calls_single_tool[{n}]",
            "gpt-oss",
            harmony(THINK, ("commentary", args, "functions.get_current_weather", "json")),
            [("get_current_weather", {"location": "Tokyo"})],
        )
        for n, args in enumerate([TOKYO, '{\n"location": "Tokyo"\n}'])
    ),
    (
        f"{VLLM_OPENAI}::test_extract_tool_calls_multiple_tools",
        "gpt-oss",
        harmony(
            THINK,
            ("commentary", TOKYO, "functions.get_current_weather", "json"),
            ("commentary", TOKYO, "functions.get_user_location", "json"),
            ("commentary", TOKYO, "functions.no_content_type", None),
            ("commentary", "foo", "functions.not_json_no_content_type", None),
            ("commentary", "{}", "functions.empty_args", "json"),
            ("commentary", "", "functions.no_args", "json"),
        ),
        [
            ("get_current_weather", {"location": "Tokyo"}),
            ("get_user_location", {"location": "Tokyo"}),
            ("no_content_type", {"location": "Tokyo"}),
            ("not_json_no_content_type", "foo"),
            ("empty_args", {}),
            ("no_args", ""),
        ],
    ),
    (
        f"{VLLM_OPENAI}::test_extract_tool_calls_with_content",
        "gpt-oss",
        harmony(
            THINK,
            ("commentary", TOKYO, "functions.get_current_weather", "json"),
            ("final", "This tool call will get the weather.", None, None),
        ),
        [("get_current_weather", {"location": "Tokyo"})],
    ),
]

# rows whose verdict here is not the peer's, and why it is kept
DIFFERENCES: dict[str, str] = {
    f"{VLLM_OPENAI}::test_extract_tool_calls_multiple_tools": (
        "vLLM passes the arguments 'foo' and '' on as they are (the client then fails on them); a harness that "
        "runs its calls reports both as errors and runs the four whose arguments are JSON"
    ),
}

# the rows the strict policy (per-block) reads differently from the peer (other calls, or an error reported
# where the peer hands the text back): the leniencies lesson 8 shows, each with the strict verdict
STRICT_DIFFERS = {
    f"{VLLM_LLAMA}::test_extract_tool_calls_simple": "a call after leading text is prose",
    f"{VLLM_LLAMA}::test_extract_tool_calls_invalid_json": "reported as a call that is not JSON",
    f"{VLLM_LLAMA}::test_extract_tool_calls_multiple_json_with_surrounding_text": "calls after leading text are prose",
    f"{VLLM_LLAMA}::test_extract_tool_calls_missing_name_key": "reported as a call of the wrong shape",
    f"{VLLM_LLAMA}::test_extract_tool_calls_missing_parameters_and_arguments_key": "reported as a call of the wrong shape",
    f"{VLLM_LLAMA}::test_extract_tool_calls_brace_in_trailing_text": "the call runs; the text after it is reported",
    f"{VLLM_LLAMA}::test_extract_tool_calls_json_fragment_in_trailing_text": "the call runs; the text after it is reported",
    f"{VLLM_LLAMA}::test_extract_tool_calls_streaming_parallel_separators['\\n'] (read whole)": "calls must be separated by ;",
    f"{VLLM_V3}::malformed_input_outputs[0]": "reported: the arguments are not JSON",
    f"{VLLM_V3}::malformed_input_outputs[1]": "reported: no call after the opener",
    f"{VLLM_V31}::test_extract_tool_calls_unparsable_block[cut off]": "reported: no call after the opener",
    f"{VLLM_V31}::test_extract_tool_calls_unparsable_block[no call markers]": "reported: no call after the opener",
    f"{VLLM_OPENAI}::test_extract_tool_calls_multiple_tools": "as under server: 'foo' and '' are reported, not run",
}


def tools_for(calls: list[tuple[str, dict]], turn: str) -> list[dict]:
    """The peer's tool names (those it expects, and any the turn names), each taking any arguments."""
    names = {name for name, _ in calls} | {
        "invalidTool",
        "toolWithoutParams",
        "get_weather",
        "searchTool",
        "foo",
        "bar",
        "not_json_no_content_type",
        "no_args",
    }
    return [
        {
            "type": "function",
            "function": {"name": n, "description": "", "parameters": {"type": "object", "additionalProperties": True}},
        }
        for n in sorted(names)
    ]


@pytest.mark.parametrize(("source", "family", "turn", "expected"), CASES, ids=[c[0].split("/")[-1] for c in CASES])
def test_the_server_policy_reads_each_peer_case_as_the_peer_s_test_expects(source, family, turn, expected):
    result = parse_turn(turn, tools_for(expected, turn), family, "server")
    found = [(c.name, c.arguments) for c in result.calls]
    if source in DIFFERENCES:
        assert found != expected, f"{source} now agrees: drop it from DIFFERENCES"
    else:
        assert found == expected, source


@pytest.mark.parametrize(("source", "family", "turn", "expected"), CASES, ids=[c[0].split("/")[-1] for c in CASES])
def test_the_strict_policy_differs_from_the_peers_only_where_the_page_says(source, family, turn, expected):
    result = parse_turn(turn, tools_for(expected, turn), family, "per-block")
    found = [(c.name, c.arguments) for c in result.calls]
    assert (found != expected or bool(result.errors)) == (source in STRICT_DIFFERS), source


def test_every_peer_row_names_a_family_with_a_server_policy():
    assert all("server" in get_format(family).policies for _, family, _, _ in CASES)


def test_the_docs_say_why_two_of_vllm_s_six_calls_are_errors_here():
    """docs/command-line.md: under both readings the two calls whose arguments are not JSON are reported, the rest run."""
    from pathlib import Path

    docs = " ".join((Path(__file__).resolve().parent.parent / "docs" / "command-line.md").read_text().split())
    source = f"{VLLM_OPENAI}::test_extract_tool_calls_multiple_tools"
    _, family, turn, expected = next(c for c in CASES if c[0] == source)
    assert source in DIFFERENCES and len(expected) == 6 and f"`{source.split('::')[1]}`" in docs
    for policy in ("per-block", "server"):
        result = parse_turn(turn, tools_for(expected, turn), family, policy)
        assert [(c.name, c.arguments) for c in result.calls] == [e for e in expected if isinstance(e[1], dict)]
        assert [(b.text, b.error) for b in result.blocks if b.error] == [
            ("foo", "error: the message to functions.NAME is not valid JSON"),
            ("", "error: the call's <|message|> is empty"),
        ]
    assert "(`the message to functions.NAME is not valid JSON`, `the call's <|message|> is empty`)" in docs
