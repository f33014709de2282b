"""The same calls written five ways, checked against each API's published JSON shapes.

The shapes below are written down from the API references, field by field, as JSON Schemas
(only the fields these objects carry; "additionalProperties": false where we write the whole
object). Sources, read 2026-11:

- OpenAI Chat Completions, request and response:
  https://platform.openai.com/docs/api-reference/chat/create and
  https://platform.openai.com/docs/api-reference/chat/object; function calling guide
  https://platform.openai.com/docs/guides/function-calling (a tool result is
  {"role": "tool", "tool_call_id": ..., "content": ...}).
- OpenAI Responses: https://platform.openai.com/docs/api-reference/responses/create and
  https://platform.openai.com/docs/api-reference/responses/object (function_call output items
  with call_id, name, arguments; function_call_output input items with call_id, output).
- Anthropic Messages: https://docs.anthropic.com/en/api/messages and
  https://docs.anthropic.com/en/docs/build-with-claude/tool-use (tools with input_schema;
  tool_use blocks {type, id, name, input}; stop_reason "tool_use"; tool_result blocks naming
  tool_use_id in a user message; tool_choice auto / any / tool / none).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from engine.core.tooldefs import load_tool_set
from engine.errors import BadInput
from engine.harness.loop import list_gallery, list_scenarios, load_scenario
from engine.teaching.exchanges import scenario_exchanges
from engine.wire.formats import (
    WireCall,
    call_id,
    differences,
    format_names,
    get_format,
    tool_choice_for,
    write_all,
    write_call,
)

STRING = {"type": "string"}
JSON_STRING = {"type": "string", "minLength": 2}  # arguments: a JSON-encoded object, checked below
OBJECT = {"type": "object"}

OPENAI_CHAT_TOOL = {
    "type": "object",
    "required": ["type", "function"],
    "additionalProperties": False,
    "properties": {
        "type": {"const": "function"},
        "function": {
            "type": "object",
            "required": ["name"],
            "additionalProperties": False,
            "properties": {"name": STRING, "description": STRING, "parameters": OBJECT, "strict": {"type": "boolean"}},
        },
    },
}
OPENAI_TOOL_CALL = {
    "type": "object",
    "required": ["id", "type", "function"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": "^call_[0-9A-Za-z]{24}$"},
        "type": {"const": "function"},
        "function": {
            "type": "object",
            "required": ["name", "arguments"],
            "additionalProperties": False,
            "properties": {"name": STRING, "arguments": JSON_STRING},
        },
    },
}
OPENAI_ASSISTANT_MESSAGE = {
    "type": "object",
    "required": ["role", "tool_calls"],
    "properties": {
        "role": {"const": "assistant"},
        "content": {"type": ["string", "null"]},
        "tool_calls": {"type": "array", "minItems": 1, "items": OPENAI_TOOL_CALL},
    },
}
OPENAI_TOOL_MESSAGE = {
    "type": "object",
    "required": ["role", "tool_call_id", "content"],
    "additionalProperties": False,
    "properties": {
        "role": {"const": "tool"},
        "tool_call_id": {"type": "string", "pattern": "^call_"},
        "content": STRING,
    },
}
OPENAI_CHAT_REQUEST = {
    "type": "object",
    "required": ["model", "messages"],
    "properties": {
        "model": STRING,
        "messages": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["role", "content"],
                "properties": {"role": {"enum": ["system", "developer", "user", "assistant"]}},
            },
        },
        "tools": {"type": "array", "items": OPENAI_CHAT_TOOL},
        "tool_choice": {
            "anyOf": [
                {"enum": ["auto", "required", "none"]},
                {
                    "type": "object",
                    "required": ["type", "function"],
                    "additionalProperties": False,
                    "properties": {
                        "type": {"const": "function"},
                        "function": {
                            "type": "object",
                            "required": ["name"],
                            "additionalProperties": False,
                            "properties": {"name": STRING},
                        },
                    },
                },
            ]
        },
    },
}
OPENAI_CHAT_RESPONSE = {
    "type": "object",
    "required": ["id", "object", "model", "choices"],
    "properties": {
        "id": {"type": "string", "pattern": "^chatcmpl-"},
        "object": {"const": "chat.completion"},
        "choices": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["index", "message", "finish_reason"],
                "properties": {"message": OPENAI_ASSISTANT_MESSAGE, "finish_reason": {"const": "tool_calls"}},
            },
        },
    },
}

RESPONSES_TOOL = {
    "type": "object",
    "required": ["type", "name", "parameters"],
    "additionalProperties": False,
    "properties": {
        "type": {"const": "function"},
        "name": STRING,
        "description": STRING,
        "parameters": OBJECT,
        "strict": {"type": "boolean"},
    },
}
RESPONSES_FUNCTION_CALL = {
    "type": "object",
    "required": ["type", "call_id", "name", "arguments"],
    "additionalProperties": False,
    "properties": {
        "type": {"const": "function_call"},
        "id": {"type": "string", "pattern": "^fc_"},
        "call_id": {"type": "string", "pattern": "^call_[0-9A-Za-z]{24}$"},
        "name": STRING,
        "arguments": JSON_STRING,
        "status": {"enum": ["in_progress", "completed", "incomplete"]},
    },
}
RESPONSES_FUNCTION_CALL_OUTPUT = {
    "type": "object",
    "required": ["type", "call_id", "output"],
    "additionalProperties": False,
    "properties": {
        "type": {"const": "function_call_output"},
        "call_id": {"type": "string", "pattern": "^call_"},
        "output": STRING,
    },
}
RESPONSES_REQUEST = {
    "type": "object",
    "required": ["model", "input"],
    "properties": {
        "model": STRING,
        "instructions": STRING,
        "input": {"type": "array", "items": {"type": "object", "required": ["role", "content"]}},
        "tools": {"type": "array", "items": RESPONSES_TOOL},
        "tool_choice": {
            "anyOf": [
                {"enum": ["auto", "required", "none"]},
                {
                    "type": "object",
                    "required": ["type", "name"],
                    "additionalProperties": False,
                    "properties": {"type": {"const": "function"}, "name": STRING},
                },
            ]
        },
    },
}
RESPONSES_RESPONSE = {
    "type": "object",
    "required": ["id", "object", "status", "output"],
    "properties": {
        "id": {"type": "string", "pattern": "^resp_"},
        "object": {"const": "response"},
        "output": {"type": "array", "minItems": 1, "items": RESPONSES_FUNCTION_CALL},
    },
}

ANTHROPIC_TOOL = {
    "type": "object",
    "required": ["name", "input_schema"],
    "additionalProperties": False,
    "properties": {
        "name": STRING,
        "description": STRING,
        "input_schema": {"type": "object", "required": ["type"], "properties": {"type": {"const": "object"}}},
    },
}
ANTHROPIC_TOOL_USE = {
    "type": "object",
    "required": ["type", "id", "name", "input"],
    "additionalProperties": False,
    "properties": {
        "type": {"const": "tool_use"},
        "id": {"type": "string", "pattern": "^toolu_01[0-9A-Za-z]{22}$"},
        "name": STRING,
        "input": OBJECT,
    },
}
ANTHROPIC_TOOL_RESULT = {
    "type": "object",
    "required": ["type", "tool_use_id", "content"],
    "additionalProperties": False,
    "properties": {
        "type": {"const": "tool_result"},
        "tool_use_id": {"type": "string", "pattern": "^toolu_"},
        "content": STRING,
        "is_error": {"type": "boolean"},
    },
}
ANTHROPIC_REQUEST = {
    "type": "object",
    "required": ["model", "max_tokens", "messages"],
    "properties": {
        "model": STRING,
        "max_tokens": {"type": "integer", "minimum": 1},
        "system": STRING,
        "messages": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["role", "content"],
                "properties": {"role": {"enum": ["user", "assistant"]}},
            },
        },
        "tools": {"type": "array", "items": ANTHROPIC_TOOL},
        "tool_choice": {
            "oneOf": [
                {
                    "type": "object",
                    "required": ["type"],
                    "additionalProperties": False,
                    "properties": {"type": {"enum": ["auto", "any", "none"]}},
                },
                {
                    "type": "object",
                    "required": ["type", "name"],
                    "additionalProperties": False,
                    "properties": {"type": {"const": "tool"}, "name": STRING},
                },
            ]
        },
    },
}
ANTHROPIC_RESPONSE = {
    "type": "object",
    "required": ["id", "type", "role", "content", "stop_reason"],
    "properties": {
        "id": {"type": "string", "pattern": "^msg_"},
        "type": {"const": "message"},
        "role": {"const": "assistant"},
        "content": {"type": "array", "minItems": 1, "items": ANTHROPIC_TOOL_USE},
        "stop_reason": {"const": "tool_use"},
    },
}
ANTHROPIC_RESULT_MESSAGE = {
    "type": "object",
    "required": ["role", "content"],
    "additionalProperties": False,
    "properties": {
        "role": {"const": "user"},
        "content": {"type": "array", "minItems": 1, "items": ANTHROPIC_TOOL_RESULT},
    },
}


# a reply with no call: the final answer
OPENAI_CHAT_TEXT_RESPONSE = {
    "type": "object",
    "required": ["id", "object", "choices"],
    "properties": {
        "choices": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["message", "finish_reason"],
                "properties": {
                    "message": {
                        "type": "object",
                        "required": ["role", "content"],
                        "additionalProperties": False,
                        "properties": {"role": {"const": "assistant"}, "content": STRING},
                    },
                    "finish_reason": {"const": "stop"},
                },
            },
        }
    },
}
RESPONSES_TEXT_RESPONSE = {
    "type": "object",
    "required": ["id", "object", "output"],
    "properties": {
        "output": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["type", "role", "content"],
                "additionalProperties": False,
                "properties": {
                    "type": {"const": "message"},
                    "id": {"type": "string", "pattern": "^msg_"},
                    "role": {"const": "assistant"},
                    "status": {"enum": ["in_progress", "completed", "incomplete"]},
                    "content": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["type", "text"],
                            "properties": {
                                "type": {"const": "output_text"},
                                "text": STRING,
                                "annotations": {"type": "array"},
                            },
                        },
                    },
                },
            },
        }
    },
}
ANTHROPIC_TEXT_RESPONSE = {
    "type": "object",
    "required": ["id", "type", "role", "content", "stop_reason"],
    "properties": {
        "content": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["type", "text"],
                "additionalProperties": False,
                "properties": {"type": {"const": "text"}, "text": STRING},
            },
        },
        "stop_reason": {"const": "end_turn"},
    },
}


def assert_shape(value, schema):
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in Draft202012Validator(schema).iter_errors(value)]
    assert errors == []


def check_exchange(exchange, calls):
    """Every object of one format against its published shape, both directions."""
    n = len(calls)
    if exchange.format == "openai-chat":
        assert_shape(exchange.request, OPENAI_CHAT_REQUEST)
        [reply] = exchange.replies
        assert_shape(reply, OPENAI_CHAT_RESPONSE)
        tool_calls = reply["choices"][0]["message"]["tool_calls"]
        # arguments are a string that decodes to the call's object
        assert [json.loads(t["function"]["arguments"]) for t in tool_calls] == [c.arguments for c in calls]
        [history] = exchange.results
        assert_shape(history[0], OPENAI_ASSISTANT_MESSAGE)
        for message in history[1:]:
            assert_shape(message, OPENAI_TOOL_MESSAGE)
        assert [m["tool_call_id"] for m in history[1:]] == [t["id"] for t in tool_calls]
        assert [m["content"] for m in history[1:]] == [c.result for c in calls]
    elif exchange.format == "openai-responses":
        assert_shape(exchange.request, RESPONSES_REQUEST)
        [reply] = exchange.replies
        assert_shape(reply, RESPONSES_RESPONSE)
        assert [json.loads(i["arguments"]) for i in reply["output"]] == [c.arguments for c in calls]
        [items] = exchange.results
        for item in items[:n]:
            assert_shape(item, RESPONSES_FUNCTION_CALL)
        for item in items[n:]:
            assert_shape(item, RESPONSES_FUNCTION_CALL_OUTPUT)
        assert [i["call_id"] for i in items[n:]] == [i["call_id"] for i in reply["output"]]
        assert [i["output"] for i in items[n:]] == [c.result for c in calls]
    elif exchange.format == "anthropic":
        assert_shape(exchange.request, ANTHROPIC_REQUEST)
        [reply] = exchange.replies
        assert_shape(reply, ANTHROPIC_RESPONSE)
        # input is the object itself, not a string
        assert [b["input"] for b in reply["content"]] == [c.arguments for c in calls]
        [message] = exchange.results
        assert_shape(message, ANTHROPIC_RESULT_MESSAGE)
        assert [b["tool_use_id"] for b in message["content"]] == [b["id"] for b in reply["content"]]
        assert [b.get("is_error", False) for b in message["content"]] == [c.is_error for c in calls]
    elif exchange.format == "qwen3":
        [reply] = exchange.replies
        assert reply.count("<tool_call>\n") == n and reply.endswith("</tool_call><|im_end|>")
        for c in calls:
            assert json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False) in reply
        [result] = exchange.results
        assert result.startswith("<|im_start|>user\n<tool_response>\n") and result.endswith(
            "</tool_response><|im_end|>\n"
        )
        assert result.count("<tool_response>") == n
        assert exchange.request.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    elif exchange.format == "react":
        assert len(exchange.replies) == len(exchange.results) == n
        for c, reply, result in zip(calls, exchange.replies, exchange.results):
            assert f"Action: {c.name}\nAction Input: {json.dumps(c.arguments, ensure_ascii=False)}" in reply
            assert result == f"<|im_start|>user\nObservation: {c.result}<|im_end|>\n"
    else:
        raise AssertionError(exchange.format)


def check_answer(exchange, answer):
    """A final answer, no call, in each format."""
    assert exchange.results == []
    [reply] = exchange.replies
    if exchange.format == "openai-chat":
        assert_shape(exchange.request, OPENAI_CHAT_REQUEST)
        assert_shape(reply, OPENAI_CHAT_TEXT_RESPONSE)
        assert reply["choices"][0]["message"]["content"] == answer
    elif exchange.format == "openai-responses":
        assert_shape(exchange.request, RESPONSES_REQUEST)
        assert_shape(reply, RESPONSES_TEXT_RESPONSE)
        assert reply["output"][0]["content"][0]["text"] == answer
    elif exchange.format == "anthropic":
        assert_shape(exchange.request, ANTHROPIC_REQUEST)
        assert_shape(reply, ANTHROPIC_TEXT_RESPONSE)
        assert reply["content"][0]["text"] == answer
    elif exchange.format == "qwen3":
        assert reply == answer + "<|im_end|>"
    else:
        assert reply.endswith("Final Answer: " + answer)


ALL_SCENARIOS = [*list_scenarios(), *list_gallery()]
PAIRS = [(name, style) for name in ALL_SCENARIOS for style in load_scenario(name).styles]


@pytest.mark.parametrize("name, style", PAIRS)
def test_every_scenario_renders_in_all_five_formats(name, style):
    steps = scenario_exchanges(name, style)
    assert any(step.calls for step in steps) or name == "tool-choice-none"
    for step in steps:
        assert [e.format for e in step.exchanges] == list(format_names())
        for exchange in step.exchanges:
            if step.answer is None:
                check_exchange(exchange, step.calls)
            else:
                check_answer(exchange, step.answer)


def test_tool_choice_none_in_every_api():
    [step] = scenario_exchanges("tool-choice-none")
    qwen3, react, chat, responses, anthropic = step.exchanges
    assert step.answer == 'The letter "r" appears 3 times in "strawberry".'
    # the tools are still sent; only the choice forbids them
    assert (chat.request["tool_choice"], responses.request["tool_choice"], anthropic.request["tool_choice"]) == (
        "none",
        "none",
        {"type": "none"},
    )
    assert len(chat.request["tools"]) == len(anthropic.request["tools"]) == 2
    assert qwen3.tokens == {"request": 264, "replies": [16], "results": []}


def test_strawberry_in_numbers():
    step, answer = scenario_exchanges("strawberry")
    assert (step.step, answer.step, answer.answer) == (0, 1, 'The letter "r" appears 3 times in "strawberry".')
    qwen3, react, chat, responses, anthropic = step.exchanges
    # the Qwen3 prompt is the 264-token prompt of lesson 2; the reply is 27 tokens and <|im_end|>
    assert qwen3.tokens == {"request": 264, "replies": [28], "results": [10]}
    assert react.tokens == {"request": 221, "replies": [31], "results": [10]}
    assert (
        chat.replies[0]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        == '{"word": "strawberry", "letter": "r"}'
    )
    assert anthropic.replies[0]["content"][0]["input"] == {"word": "strawberry", "letter": "r"}
    assert chat.ids == responses.ids != anthropic.ids


STRAWBERRY = load_tool_set("strawberry")
QUESTION = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "How many r in strawberry?"}]
TWO = [
    WireCall("count_letter", {"word": "strawberry", "letter": "r"}, "3"),
    WireCall("tokenize", {"text": "strawberry"}, '["str", "aw", "berry"]'),
]


def test_parallel_calls_in_each_format():
    qwen3, react, chat, responses, anthropic = write_all(TWO, STRAWBERRY, QUESTION)
    for exchange in (qwen3, react, chat, responses, anthropic):
        check_exchange(exchange, TWO)
    assert len(chat.replies[0]["choices"][0]["message"]["tool_calls"]) == 2
    assert len(responses.replies[0]["output"]) == 2
    assert len(anthropic.replies[0]["content"]) == 2 and len(anthropic.results) == 1
    # ReAct takes one reply per call
    assert len(react.replies) == 2
    # a system message moves: Responses' instructions, Anthropic's top-level system
    assert responses.request["instructions"] == "Be brief." and anthropic.request["system"] == "Be brief."
    assert all(m["role"] != "system" for m in anthropic.request["messages"])


def test_calls_and_an_answer_cannot_share_a_reply():
    with pytest.raises(BadInput, match="either calls or a final answer"):
        write_call("anthropic", TWO, STRAWBERRY, QUESTION, answer="3")


def test_ids_are_stable_and_distinct():
    assert call_id("openai-chat", 0) == call_id("openai-chat", 0)
    ids = {call_id("anthropic", i) for i in range(50)}
    assert len(ids) == 50
    with pytest.raises(BadInput, match="by order"):
        call_id("qwen3", 0)


@pytest.mark.parametrize(
    "fmt, choice, expected",
    [
        ("openai-chat", "auto", "auto"),
        ("openai-chat", "required", "required"),
        ("openai-chat", "none", "none"),
        ("openai-chat", "tokenize", {"type": "function", "function": {"name": "tokenize"}}),
        ("openai-responses", "required", "required"),
        ("openai-responses", "tokenize", {"type": "function", "name": "tokenize"}),
        ("anthropic", "auto", {"type": "auto"}),
        ("anthropic", "required", {"type": "any"}),
        ("anthropic", "none", {"type": "none"}),
        ("anthropic", "tokenize", {"type": "tool", "name": "tokenize"}),
    ],
)
def test_tool_choice_words(fmt, choice, expected):
    assert tool_choice_for(fmt, choice) == expected
    exchange = write_call(fmt, TWO[:1], STRAWBERRY, QUESTION, choice)
    check_exchange(exchange, TWO[:1])
    assert exchange.request["tool_choice"] == expected


def test_tool_choice_table_is_not_changed_by_use():
    tool_choice_for("anthropic", "tokenize")
    assert get_format("anthropic").tool_choice["named"] == {"type": "tool", "name": "<tool name>"}


def test_differences_cover_every_format():
    aspects = [row["aspect"] for row in differences()]
    assert {"arguments", "how a result finds its call", "parallel calls"} <= set(aspects)
    assert any(a.startswith("tool_choice") for a in aspects)
    for row in differences():
        assert set(row) == {"aspect", *format_names()}


@pytest.mark.parametrize(
    "call, fmt, choice, message",
    [
        ([], "openai-chat", "auto", "at least one call"),
        ([], "anthropic", "auto", "at least one call"),
        (TWO, "gemini", "auto", "unknown format"),
        (TWO, "qwen3", "auto", None),
    ],
)
def test_bad_requests_are_explained(call, fmt, choice, message):
    if message is None:
        with pytest.raises(BadInput, match="no tool_choice field"):
            tool_choice_for(fmt, choice)
        return
    with pytest.raises(BadInput, match=message):
        write_call(fmt, call, STRAWBERRY, QUESTION, choice)


# -- properties: any call survives each API's encoding -------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
CALLS = st.lists(
    st.builds(
        WireCall,
        st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,20}", fullmatch=True),
        st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4),
        st.text(max_size=40),
        st.booleans(),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(CALLS)
def test_any_calls_keep_their_arguments_and_ids_in_every_api(calls):
    for fmt in ("openai-chat", "openai-responses", "anthropic"):
        exchange = write_call(fmt, calls, STRAWBERRY, QUESTION)
        check_exchange(exchange, calls)
        # one distinct id per call, and the same ids on a second writing
        assert len(set(exchange.ids)) == len(calls)
        assert write_call(fmt, calls, STRAWBERRY, QUESTION).ids == exchange.ids
