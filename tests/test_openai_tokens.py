"""OpenAI's published token-counting method for tools, on the vendored encodings, offline.

The reference is OpenAI's cookbook "How to count tokens with tiktoken", section 7
(https://github.com/openai/openai-cookbook/blob/main/examples/How_to_count_tokens_with_tiktoken.ipynb):
its example request, one `get_current_weather` tool and two messages, is counted there by the
API as 101 prompt tokens on gpt-4o and gpt-4o-mini, and 105 on gpt-4 and gpt-3.5-turbo.
"""

from __future__ import annotations

import hashlib
import json
import socket
import tempfile

import pytest

from engine.__main__ import main
from engine.core.openai_encodings import ENCODING_SPECS, ENCODINGS_DIR
from engine.core.tooldefs import load_tool_set
from engine.errors import BadInput
from engine.wire.openai_tokens import (
    compare_tool_costs,
    compare_with_openai,
    count_openai_messages,
    count_openai_text,
    count_tools_lines,
    estimate_openai_tokens,
    load_openai_encoding,
)

# the cookbook's example, as written there
WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                    "unit": {
                        "type": "string",
                        "description": "The unit of temperature to return",
                        "enum": ["celsius", "fahrenheit"],
                    },
                },
                "required": ["location"],
            },
        },
    }
]
WEATHER_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant that can answer to questions about the weather."},
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]


@pytest.mark.parametrize(
    "model, encoding, tools_tokens, messages_tokens, total",
    [
        ("gpt-4o", "o200k_base", 68, 33, 101),
        ("gpt-4o-mini", "o200k_base", 68, 33, 101),
        ("gpt-4", "cl100k_base", 71, 34, 105),
        ("gpt-3.5-turbo", "cl100k_base", 71, 34, 105),
    ],
)
def test_cookbook_example_gives_the_apis_totals(model, encoding, tools_tokens, messages_tokens, total):
    estimate = estimate_openai_tokens(WEATHER_TOOLS, WEATHER_MESSAGES, model)
    assert estimate.as_json() == {
        "model": model,
        "encoding": encoding,
        "tools_tokens": tools_tokens,
        "messages_tokens": messages_tokens,
        "total": total,
        "method": "openai-cookbook",
    }
    assert sum(line.tokens for line in estimate.lines) == tools_tokens


def test_the_lines_the_method_counts():
    lines = count_tools_lines(WEATHER_TOOLS, "gpt-4o")
    assert [(line.kind, line.text) for line in lines] == [
        ("function", "get_current_weather:Get the current weather in a given location"),
        ("constant", ""),
        ("property", "location:string:The city and state, e.g. San Francisco, CA"),
        ("enum item", "celsius"),
        ("enum item", "fahrenheit"),
        ("property", "unit:string:The unit of temperature to return"),
        ("constant", ""),
    ]
    # func_init 7, prop_init 3, func_end 12 on gpt-4o
    assert [lines[1].tokens, lines[-1].tokens] == [3, 12]


@pytest.mark.parametrize(
    "encoding, text, ids",
    [
        ("cl100k_base", "hello world", [15339, 1917]),
        ("o200k_base", "hello world", [24912, 2375]),
        ("cl100k_base", " strawberry", [73700]),
        ("o200k_base", " strawberry", [101830]),
    ],
)
def test_vendored_encodings_match_the_spot_checks(encoding, text, ids):
    assert load_openai_encoding(encoding).encode(text) == ids


@pytest.mark.parametrize("name", list(ENCODING_SPECS))
def test_vendored_files_are_byte_for_byte_the_official_ones(name):
    spec = ENCODING_SPECS[name]
    assert hashlib.sha256((ENCODINGS_DIR / spec.file).read_bytes()).hexdigest() == spec.sha256


def test_a_damaged_encoding_file_is_refused(monkeypatch, tmp_path):
    import engine.core.openai_encodings as module

    damaged = tmp_path / "cl100k_base.tiktoken"
    damaged.write_bytes((ENCODINGS_DIR / "cl100k_base.tiktoken").read_bytes()[:-10])
    monkeypatch.setattr(module, "ENCODINGS_DIR", tmp_path)
    load_openai_encoding.cache_clear()
    try:
        with pytest.raises(BadInput, match="does not match tiktoken's pinned sha256"):
            load_openai_encoding("cl100k_base")
        with pytest.raises(BadInput, match="is missing"):
            load_openai_encoding("o200k_base")
        with pytest.raises(BadInput, match="unknown encoding"):
            load_openai_encoding("p50k_base")
    finally:
        load_openai_encoding.cache_clear()


def test_loading_needs_no_network_and_writes_no_cache(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise AssertionError("the encodings must load without the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    load_openai_encoding.cache_clear()
    try:
        assert count_openai_text("How many r in strawberry?", "cl100k_base") == 6
        assert count_openai_text("How many r in strawberry?", "o200k_base") > 0
    finally:
        load_openai_encoding.cache_clear()
    # tiktoken's default cache would be tmp_path/data-gym-cache
    assert list(tmp_path.iterdir()) == []
    import os

    assert "TIKTOKEN_CACHE_DIR" not in os.environ


def test_special_token_spellings_are_counted_as_text():
    assert count_openai_text("<|endoftext|>", "cl100k_base") > 1


def test_strawberry_tools_on_both_families():
    tools = load_tool_set("strawberry")
    messages = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]
    gpt4o, gpt4 = compare_with_openai(tools, messages)
    assert (gpt4o.model, gpt4.model) == ("gpt-4o", "gpt-4")
    # no tools: the tools part is 0, not func_end
    assert estimate_openai_tokens([], messages).tools_tokens == 0
    assert gpt4o.messages_tokens == estimate_openai_tokens([], messages).messages_tokens
    # every function adds func_init, so gpt-4's 10 against gpt-4o's 7 shows in the difference
    assert gpt4o.tools_tokens > 0 and gpt4.tools_tokens > 0


def test_a_name_field_adds_one():
    plain = count_openai_messages([{"role": "user", "content": "hi"}], "gpt-4o")
    named = count_openai_messages([{"role": "user", "content": "hi", "name": "ann"}], "gpt-4o")
    assert named - plain == count_openai_text("ann") + 1


@pytest.mark.parametrize(
    "tools, messages, model, message",
    [
        ([], [{"role": "user", "content": "hi"}], "claude", "constants for gpt-4o"),
        ([], [{"role": "assistant", "content": "", "tool_calls": []}], "gpt-4o", "'tool_calls' is not a string"),
        ([], [{"role": "user", "content": "x" * 2_100_000}], "gpt-4o", "counts up to"),
    ],
)
def test_bad_requests_are_explained(tools, messages, model, message):
    with pytest.raises(BadInput, match=message):
        estimate_openai_tokens(tools, messages, model)


@pytest.mark.parametrize(
    "tool",
    [
        {"type": "function", "function": {"name": "bare"}},
        {
            "type": "function",
            "function": {"name": "odd", "parameters": {"type": "object", "properties": {"n": {"enum": [1, 2]}}}},
        },
        {
            "type": "function",
            "function": {
                "name": "multi",
                "parameters": {"type": "object", "properties": {"v": {"type": ["string", "null"]}}},
            },
        },
    ],
)
def test_tools_the_cookbook_never_tried_are_still_counted(tool):
    estimate = estimate_openai_tokens([tool], [{"role": "user", "content": "hi"}])
    assert estimate.tools_tokens >= 7 + 12


def test_cli_openai_tokens(capsys, tmp_path):
    tools = tmp_path / "tools.json"
    messages = tmp_path / "messages.json"
    tools.write_text(json.dumps(WEATHER_TOOLS))
    messages.write_text(json.dumps(WEATHER_MESSAGES))
    assert main(["openai-tokens", "--tools", str(tools), "--messages", str(messages)]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "model": "gpt-4o",
        "encoding": "o200k_base",
        "tools_tokens": 68,
        "messages_tokens": 33,
        "total": 101,
        "method": "openai-cookbook",
    }
    assert main(["openai-tokens", "--tools", str(tools), "--messages", str(messages), "--model", "gpt-4"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 105


@pytest.mark.parametrize(
    "argv, message",
    [
        (["openai-tokens", "--tools", "T", "--messages", "M", "--model", "gpt-5"], "invalid choice"),
        (["openai-tokens", "--tools", "T"], "required"),
    ],
)
def test_cli_openai_tokens_bad_arguments(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and err.count("\n") == 1


def test_cli_openai_tokens_bad_files(capsys, tmp_path):
    tools = tmp_path / "tools.json"
    messages = tmp_path / "messages.json"
    tools.write_text("[]")
    messages.write_text('[{"role": "robot"}]')
    assert main(["openai-tokens", "--tools", str(tools), "--messages", str(messages)]) == 2
    err = capsys.readouterr().err
    assert "needs a role" in err and err.count("\n") == 1
    assert main(["openai-tokens", "--tools", str(tmp_path / "none.json"), "--messages", str(messages)]) == 2
    assert "cannot read tools file" in capsys.readouterr().err


@pytest.mark.parametrize(
    "tool_set, expected",
    [
        (
            "strawberry",
            [
                ("Qwen3 native", 241, 264, True),
                ("Qwen3 ReAct", 198, 221, True),
                ("gpt-4o", 83, 101, False),
                ("gpt-4", 89, 107, False),
            ],
        ),
        (
            "coding-agent",
            [
                ("Qwen3 native", 1147, 1170, True),
                ("Qwen3 ReAct", 662, 685, True),
                ("gpt-4o", 532, 550, False),
                ("gpt-4", 568, 586, False),
            ],
        ),
    ],
)
def test_calculator_comparison_puts_estimates_beside_exact_counts(tool_set, expected):
    messages = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]
    rows = compare_tool_costs(load_tool_set(tool_set), messages)
    assert [(r.label, r.tools_tokens, r.prompt_tokens, r.exact) for r in rows] == expected
    assert all("not measured" in r.method for r in rows if not r.exact)
