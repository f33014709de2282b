"""Prompts as the model sees them: byte for byte the template's text, spans that add up."""

from __future__ import annotations

import pytest

from engine.core.call_formats import lesson_format_names
from engine.core.call_formats.react import describe_tool_react
from engine.core.prompt import Request, count_tools_tokens, render, with_prefix
from engine.core.tokenizer import load_tokenizer
from engine.core.tooldefs import load_tool_set

QUESTION = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]
CALL = '<tool_call>\n{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}\n</tool_call>'
HISTORY = [
    {"role": "system", "content": "You are terse."},
    *QUESTION,
    {"role": "assistant", "content": CALL},
    {"role": "tool", "content": "3"},
    {"role": "tool", "content": "second result"},
    {"role": "assistant", "content": "3."},
    {"role": "user", "content": "And in raspberry?"},
]


@pytest.fixture(scope="module")
def hf():
    from engine.core.tokenizer import load_hf_tokenizer

    return load_hf_tokenizer()


def test_strawberry_tools_cost_241_tokens():
    request = Request(QUESTION, load_tool_set("strawberry"))
    assert render(request).count == 264
    assert count_tools_tokens(request) == 241


@pytest.mark.parametrize("messages", [QUESTION, HISTORY], ids=["question", "history"])
@pytest.mark.parametrize("tool_set", ["strawberry", "harness", "coding-agent", None])
@pytest.mark.parametrize("thinking", [False, True])
def test_native_text_is_apply_chat_template(hf, messages, tool_set, thinking):
    tools = load_tool_set(tool_set) if tool_set else []
    prompt = render(Request(messages, tools, "native", enable_thinking=thinking))
    expected = hf.apply_chat_template(
        messages, tools=tools or None, add_generation_prompt=True, enable_thinking=thinking, tokenize=False
    )
    assert prompt.text == expected
    assert prompt.ids == hf.encode(expected, add_special_tokens=False)


@pytest.mark.parametrize("style", lesson_format_names())
@pytest.mark.parametrize("messages", [QUESTION, HISTORY], ids=["question", "history"])
@pytest.mark.parametrize("tool_set", ["strawberry", "coding-agent", None])
def test_spans_add_up_and_cover_the_text(style, messages, tool_set):
    tools = load_tool_set(tool_set) if tool_set else []
    prompt = render(Request(messages, tools, style))
    assert sum(s.tokens for s in prompt.spans) == prompt.count
    assert prompt.spans[0].start == 0 and prompt.spans[-1].end == len(prompt.text)
    for before, after in zip(prompt.spans, prompt.spans[1:]):
        assert before.end == after.start
    assert len(prompt.token_spans) == prompt.count
    # one span per tool, one per message, named in order
    tool_labels = [s.label for s in prompt.spans if s.kind == "tool"]
    assert tool_labels == [f"tool {t['function']['name']}" for t in tools]
    assert [s.message_index for s in prompt.spans if s.kind == "message"] == list(range(len(messages)))


def test_native_spans_hold_what_their_label_says():
    prompt = render(Request(HISTORY, load_tool_set("strawberry")))
    by_label = {s.label: prompt.span_text(s) for s in prompt.spans}
    assert by_label["tool count_letter"].startswith('\n{"type": "function", "function": {"name": "count_letter"')
    assert by_label["system message 0"] == "You are terse.\n\n"
    assert by_label["assistant message 2"] == f"<|im_start|>assistant\n{CALL}<|im_end|>\n"
    assert by_label["tool result 3"] == "<|im_start|>user\n<tool_response>\n3\n</tool_response>"
    assert by_label["tool result 4"] == "\n<tool_response>\nsecond result\n</tool_response><|im_end|>\n"
    assert by_label["generation prompt"] == "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    counts = {s.label: s.tokens for s in prompt.spans}
    assert counts["generation prompt"] == 7


def test_react_prompt_lists_tools_and_protocol():
    prompt = render(Request(HISTORY, load_tool_set("strawberry"), "react"))
    assert "<tools>" not in prompt.text
    assert "Action: the action to take, one of [count_letter, tokenize]" in prompt.text
    assert "- letter (string, required): The single letter to count." in prompt.text
    assert "<|im_start|>user\nObservation: 3<|im_end|>" in prompt.text
    assert [s.label for s in prompt.spans if s.kind == "message"][3] == "tool result 3"


def test_react_is_counted_with_the_same_tokenizer_and_differs():
    tools = load_tool_set("strawberry")
    native = count_tools_tokens(Request(QUESTION, tools, "native"))
    react = count_tools_tokens(Request(QUESTION, tools, "react"))
    assert (native, react) == (241, 198)


@pytest.mark.parametrize(
    "schema, words",
    [
        ({"type": "string"}, "string"),
        ({"type": "array", "items": {"type": "integer"}}, "array of integer"),
        ({"enum": ["a", "b"]}, 'one of: "a", "b"'),
        ({"type": ["string", "null"]}, "string or null"),
        ({}, "any"),
    ],
)
def test_react_describes_types_in_words(schema, words):
    tool = {
        "type": "function",
        "function": {
            "name": "t",
            "description": "d",
            "parameters": {"type": "object", "properties": {"x": schema}, "required": []},
        },
    }
    assert f"- x ({words}, optional)" in describe_tool_react(tool)


def test_bad_style_is_refused():
    from engine.errors import BadInput

    with pytest.raises(BadInput, match="native"):
        render(Request(QUESTION, [], "xml"))


def test_message_spans_give_the_text_and_tokens_of_chosen_messages():
    tools = load_tool_set("strawberry")
    messages = [
        {"role": "user", "content": "How many r's in strawberry?"},
        {"role": "assistant", "content": "Let me count."},
        {"role": "tool", "content": "3"},
    ]
    prompt = render(Request(messages, tools, "native"))
    assert prompt.message_text([2]) == "<|im_start|>user\n<tool_response>\n3\n</tool_response><|im_end|>\n"
    assert prompt.message_tokens([2]) == len(load_tokenizer().encode(prompt.message_text([2])))
    assert prompt.message_tokens([0, 1, 2]) == sum(s.tokens for s in prompt.spans if s.kind == "message")
    # the conversation starts at the user's question: the tool definitions come before it
    assert prompt.conversation_spans()[0].message_index == 0
    assert all(s.kind != "tool" for s in prompt.conversation_spans())


@pytest.mark.parametrize("prefix", ['<tool_call>\n{"name": "tokenize"', "Sure, ", "ß is one character, two bytes"])
def test_a_prefix_follows_the_generation_prompt_as_a_span_of_its_own(prefix):
    tok = load_tokenizer()
    prompt = render(Request(QUESTION), tok)
    begun = with_prefix(prompt, prefix, tok)
    assert begun.text == prompt.text + prefix and begun.ids == prompt.ids + tok.encode(prefix)
    assert begun.spans[-1].label == "assistant prefix" and begun.span_text(begun.spans[-1]) == prefix
    assert sum(s.tokens for s in begun.spans) == begun.count == len(begun.pieces) == len(begun.token_spans)
    # the prefix's pieces stand where its text does: from the prompt's end to the new end
    assert (begun.pieces[prompt.count].start, begun.pieces[-1].end) == (len(prompt.text), len(begun.text))
