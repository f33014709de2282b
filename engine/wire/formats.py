"""One tool call, written five ways: Qwen3's text, ReAct's text, and three public APIs' JSON.

A call (a name, its arguments, and the result that goes back) becomes the request, the
model's reply and the returned result of each format:

- `qwen3`: the Qwen3 chat template's own text (engine.core.prompt / tokenizer.render_chat): the
  tools in the system turn, `<tool_call>` JSON in the reply, `<tool_response>` in a user turn;
- `react`: the project's ReAct prose (engine.core.prompt), `Action:` / `Action Input:` lines, and
  `Observation:` in a user turn: one Action per reply, so parallel calls take one reply each;
- `openai-chat`: OpenAI Chat Completions (https://platform.openai.com/docs/api-reference/chat):
  `tools` of `{"type": "function", "function": {...}}`; the reply's `message.tool_calls`, each
  with an `id`, `"type": "function"` and `function.arguments` as a JSON-encoded *string*;
  each result a `{"role": "tool", "tool_call_id", "content"}` message;
- `openai-responses`: OpenAI Responses (https://platform.openai.com/docs/api-reference/responses):
  flattened tools `{"type": "function", "name", "description", "parameters"}`; `function_call`
  output items with `call_id`, `name` and string `arguments`; each result a
  `function_call_output` input item naming that `call_id`;
- `anthropic`: Anthropic Messages (https://docs.anthropic.com/en/api/messages and
  https://docs.anthropic.com/en/docs/build-with-claude/tool-use): tools with `input_schema`;
  `tool_use` content blocks `{type, id, name, input}` whose `input` is an *object*, with
  `stop_reason: "tool_use"`; the results as `tool_result` blocks in one user message, each
  naming its `tool_use_id`.

Ids are made from the call's index (the same call always gets the same id) and shaped as the
API writes them (`call_…`, `toolu_01…`). `TOOL_CHOICES` and `DIFFERENCES` hold each API's
`tool_choice` words and what differs between the formats, as data a page can draw.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field

from ..core.parse import ACTION_PATTERN, load_strict_json
from ..core.prompt import Request, render
from ..core.tokenizer import load_tokenizer
from ..errors import BadInput
from ..harness.loop import load_scenario, run_scenario
from ..teaching.calculator import call_text

FORMATS = ("qwen3", "react", "openai-chat", "openai-responses", "anthropic")
TITLES = {
    "qwen3": "Qwen3 native (<tool_call> in the text)",
    "react": "ReAct (Action / Observation in the text)",
    "openai-chat": "OpenAI Chat Completions",
    "openai-responses": "OpenAI Responses",
    "anthropic": "Anthropic Messages",
}
OPENAI_MODEL = "gpt-4o"  # an example model name the request bodies carry
ANTHROPIC_MODEL = "claude-opus-4-6"  # the model id of Anthropic's own tool-use example (Tool use, platform.claude.com)
ANTHROPIC_MAX_TOKENS = 1024  # Anthropic requires max_tokens in every request
NAME = "<tool name>"  # where the named form of tool_choice puts the tool's name

# how each API spells our four tool_choice modes (auto, required, none, one named tool)
TOOL_CHOICES = {
    "openai-chat": {
        "auto": "auto",
        "required": "required",
        "none": "none",
        "named": {"type": "function", "function": {"name": NAME}},
    },
    "openai-responses": {
        "auto": "auto",
        "required": "required",
        "none": "none",
        "named": {"type": "function", "name": NAME},
    },
    "anthropic": {
        "auto": {"type": "auto"},
        "required": {"type": "any"},
        "none": {"type": "none"},
        "named": {"type": "tool", "name": NAME},
    },
}

# what differs, one row per question, one column per format
DIFFERENCES = [
    {
        "aspect": "where the call is written",
        "qwen3": "JSON inside <tool_call> … </tool_call> in the reply's text",
        "react": "Action: and Action Input: lines in the reply's text",
        "openai-chat": "message.tool_calls, beside (or instead of) content",
        "openai-responses": "function_call items in output",
        "anthropic": "tool_use blocks in content",
    },
    {
        "aspect": "arguments",
        "qwen3": "a JSON object, in the text",
        "react": "a JSON object on the Action Input line",
        "openai-chat": "a string holding JSON (function.arguments): parse it yourself",
        "openai-responses": "a string holding JSON (arguments): parse it yourself",
        "anthropic": "an object (input), already parsed",
    },
    {
        "aspect": "how a result finds its call",
        "qwen3": "by order: the n-th <tool_response> answers the n-th <tool_call>",
        "react": "by order: the Observation follows its one Action",
        "openai-chat": "by id: tool_call_id = tool_calls[i].id",
        "openai-responses": "by id: function_call_output.call_id = function_call.call_id",
        "anthropic": "by id: tool_result.tool_use_id = tool_use.id",
    },
    {
        "aspect": "the result goes back as",
        "qwen3": "a user turn with one <tool_response> per result",
        "react": "a user turn that starts with Observation:",
        "openai-chat": 'one {"role": "tool"} message per result',
        "openai-responses": "one function_call_output input item per result",
        "anthropic": "one user message with a tool_result block per result",
    },
    {
        "aspect": "parallel calls",
        "qwen3": "several <tool_call> blocks in one reply",
        "react": "no: one Action per reply, one reply per call",
        "openai-chat": "several entries in tool_calls (parallel_tool_calls: false turns it off)",
        "openai-responses": "several function_call items (parallel_tool_calls: false turns it off)",
        "anthropic": "several tool_use blocks (disable_parallel_tool_use: true, inside tool_choice, turns it off)",
    },
    {
        "aspect": "the reply says it called a tool",
        "qwen3": "the text holds a <tool_call> block (the parser decides)",
        "react": "the text holds an Action: line (the parser decides)",
        "openai-chat": 'finish_reason: "tool_calls"',
        "openai-responses": "output holds function_call items",
        "anthropic": 'stop_reason: "tool_use"',
    },
    {
        "aspect": "tool_choice: auto / required / none / one tool",
        "qwen3": "no field: a server maps OpenAI's tool_choice onto the template and a grammar",
        "react": "no field: the prompt asks, nothing enforces",
        "openai-chat": 'auto / required / none / {"type": "function", "function": {"name"}}',
        "openai-responses": 'auto / required / none / {"type": "function", "name"}',
        "anthropic": '{"type": "auto"} / {"type": "any"} / {"type": "none"} / {"type": "tool", "name"}',
    },
]


@dataclass(frozen=True)
class WireCall:
    """One call in no format yet: what the model asked for and what came back."""

    name: str
    arguments: dict
    result: str  # the text that goes back to the model
    is_error: bool = False  # the result is an error the harness wrote


@dataclass(frozen=True)
class WireExchange:
    """One format's request, the model's reply(es) and the result(s) sent back."""

    format: str  # a key of FORMATS
    title: str
    request: object  # the request body (dict) or the prompt text (str)
    replies: list  # one per model call the calls need: a response body (dict) or the reply text (str)
    results: list  # what goes back after each reply: messages/items (list or dict) or text (str)
    tokens: dict = field(default_factory=dict)  # text formats: Qwen3 token counts of request, replies, results
    ids: list[str] = field(default_factory=list)  # the id that ties each call to its result ([] where order does)


def make_id(prefix: str, index: int, length: int) -> str:
    """A stable id for the call at `index`, in base 62 like the APIs' own ids."""
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    number = int.from_bytes(hashlib.sha256(f"{prefix}{index}".encode()).digest(), "big")
    digits = []
    for _ in range(length):
        number, digit = divmod(number, 62)
        digits.append(alphabet[digit])
    return prefix + "".join(digits)


def call_id(fmt: str, index: int) -> str:
    """The id of call `index` as the format writes it (Responses shares OpenAI's call_ form)."""
    if fmt == "anthropic":
        return make_id("toolu_01", index, 22)
    if fmt in ("openai-chat", "openai-responses"):
        return make_id("call_", index, 24)
    raise BadInput(f"{fmt} matches results to calls by order, not by id")


def tool_choice_for(fmt: str, choice: str = "auto") -> object:
    """Our tool_choice (auto, required, none, or a tool's name) in an API's words."""
    if fmt not in TOOL_CHOICES:
        raise BadInput(f"{fmt} has no tool_choice field; the APIs with one are {', '.join(TOOL_CHOICES)}")
    words = TOOL_CHOICES[fmt]
    if choice in ("auto", "required", "none"):
        return copy.deepcopy(words[choice])
    named = copy.deepcopy(words["named"])
    if "function" in named:
        named["function"]["name"] = choice
    else:
        named["name"] = choice
    return named


def _function(tool: dict) -> dict:
    fn = tool.get("function", tool) if isinstance(tool, dict) else {}
    return {
        "name": str(fn.get("name", "")),
        "description": str(fn.get("description", "")),
        "parameters": fn.get("parameters") or {"type": "object", "properties": {}},
    }


def _split_system(messages: list[dict]) -> tuple[str | None, list[dict]]:
    if messages and messages[0].get("role") == "system":
        return str(messages[0].get("content", "")), messages[1:]
    return None, messages


def _check(calls: list[WireCall], messages: list[dict], answer: str | None = None) -> None:
    if not calls and answer is None:
        raise BadInput("give at least one call, or an answer, to write out")
    if calls and answer is not None:
        raise BadInput("write either calls or a final answer: a reply with calls waits for their results")
    for message in messages:
        if message.get("role") not in ("system", "user", "assistant"):
            raise BadInput("the request's messages must be system, user or assistant text; calls come separately")


# -- the three APIs -----------------------------------------------------------------------------
def openai_chat(
    calls: list[WireCall], tools: list[dict], messages: list[dict], choice: str = "auto", answer: str | None = None
) -> WireExchange:
    _check(calls, messages, answer)
    ids = [call_id("openai-chat", i) for i in range(len(calls))]
    request = {
        "model": OPENAI_MODEL,
        "messages": [{"role": m["role"], "content": m.get("content", "")} for m in messages],
        "tools": [{"type": "function", "function": _function(t)} for t in tools],
        "tool_choice": tool_choice_for("openai-chat", choice),
    }
    if answer is not None:
        message = {"role": "assistant", "content": answer}
        reply = {
            "id": make_id("chatcmpl-", 0, 29),
            "object": "chat.completion",
            "model": OPENAI_MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
        return WireExchange("openai-chat", TITLES["openai-chat"], request, [reply], [])
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": ids[i], "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
            for i, c in enumerate(calls)
        ],
    }
    reply = {
        "id": make_id("chatcmpl-", 0, 29),
        "object": "chat.completion",
        "model": OPENAI_MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }
    # the next request re-sends the assistant message, then one tool message per call
    results = [{"role": "tool", "tool_call_id": ids[i], "content": c.result} for i, c in enumerate(calls)]
    return WireExchange("openai-chat", TITLES["openai-chat"], request, [reply], [[copy.deepcopy(message), *results]], ids=ids)


def openai_responses(
    calls: list[WireCall], tools: list[dict], messages: list[dict], choice: str = "auto", answer: str | None = None
) -> WireExchange:
    _check(calls, messages, answer)
    ids = [call_id("openai-responses", i) for i in range(len(calls))]
    system, rest = _split_system(messages)
    request: dict = {"model": OPENAI_MODEL}
    if system is not None:
        request["instructions"] = system
    request["input"] = [{"role": m["role"], "content": m.get("content", "")} for m in rest]
    request["tools"] = [{"type": "function", **_function(t)} for t in tools]
    request["tool_choice"] = tool_choice_for("openai-responses", choice)
    if answer is not None:
        text_item = {
            "type": "message",
            "id": make_id("msg_", 0, 24),
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": answer, "annotations": []}],
        }
        reply = {"id": make_id("resp_", 0, 24), "object": "response", "status": "completed", "model": OPENAI_MODEL, "output": [text_item]}
        return WireExchange("openai-responses", TITLES["openai-responses"], request, [reply], [])
    items = [
        {
            "type": "function_call",
            "id": make_id("fc_", i, 24),
            "call_id": ids[i],
            "name": c.name,
            "arguments": json.dumps(c.arguments, ensure_ascii=False),
            "status": "completed",
        }
        for i, c in enumerate(calls)
    ]
    reply = {"id": make_id("resp_", 0, 24), "object": "response", "status": "completed", "model": OPENAI_MODEL, "output": items}
    # the next request's input carries the function_call items and one output per call_id
    results = [{"type": "function_call_output", "call_id": ids[i], "output": c.result} for i, c in enumerate(calls)]
    return WireExchange(
        "openai-responses", TITLES["openai-responses"], request, [reply], [[*copy.deepcopy(items), *results]], ids=ids
    )


def anthropic_messages(
    calls: list[WireCall], tools: list[dict], messages: list[dict], choice: str = "auto", answer: str | None = None
) -> WireExchange:
    _check(calls, messages, answer)
    ids = [call_id("anthropic", i) for i in range(len(calls))]
    system, rest = _split_system(messages)
    request: dict = {"model": ANTHROPIC_MODEL, "max_tokens": ANTHROPIC_MAX_TOKENS}
    if system is not None:
        request["system"] = system
    request["messages"] = [{"role": m["role"], "content": m.get("content", "")} for m in rest]
    request["tools"] = [
        {"name": f["name"], "description": f["description"], "input_schema": f["parameters"]} for f in map(_function, tools)
    ]
    request["tool_choice"] = tool_choice_for("anthropic", choice)
    if answer is not None:
        reply = {
            "id": make_id("msg_01", 0, 22),
            "type": "message",
            "role": "assistant",
            "model": ANTHROPIC_MODEL,
            "content": [{"type": "text", "text": answer}],
            "stop_reason": "end_turn",
        }
        return WireExchange("anthropic", TITLES["anthropic"], request, [reply], [])
    content = [{"type": "tool_use", "id": ids[i], "name": c.name, "input": copy.deepcopy(c.arguments)} for i, c in enumerate(calls)]
    reply = {
        "id": make_id("msg_01", 0, 22),
        "type": "message",
        "role": "assistant",
        "model": ANTHROPIC_MODEL,
        "content": content,
        "stop_reason": "tool_use",
    }
    # every result goes back in one user message, a tool_result block per tool_use id
    result = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": ids[i], "content": c.result, **({"is_error": True} if c.is_error else {})}
            for i, c in enumerate(calls)
        ],
    }
    return WireExchange("anthropic", TITLES["anthropic"], request, [reply], [result], ids=ids)


# -- the two text formats -----------------------------------------------------------------------
def qwen3_text(
    calls: list[WireCall], tools: list[dict], messages: list[dict], choice: str = "auto", answer: str | None = None
) -> WireExchange:
    """The template's own text: the prompt, the reply it writes for these calls, the results' turn."""
    _check(calls, messages, answer)
    tok = load_tokenizer()
    prompt = render(Request(messages, tools, "native"), tok)
    if answer is not None:
        return WireExchange(
            "qwen3", TITLES["qwen3"], prompt.text, [answer + "<|im_end|>"], [], {"request": prompt.count, "replies": [tok.count(answer) + 1], "results": []}
        )
    assistant = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls],
    }
    written = tok.render_chat([*messages, assistant], tools, add_generation_prompt=False)
    # what the model writes: everything after the generation prompt, <|im_end|> included
    reply = written[len(prompt.text) :].rstrip("\n")
    turn = reply.removesuffix("<|im_end|>")
    after = render(
        Request([*messages, {"role": "assistant", "content": turn}, *({"role": "tool", "content": c.result} for c in calls)],
                tools, "native", add_generation_prompt=False),
        tok,
    )
    results = range(len(messages) + 1, len(messages) + 1 + len(calls))
    result = after.message_text(results)
    tokens = {"request": prompt.count, "replies": [tok.count(turn) + 1], "results": [after.message_tokens(results)]}
    return WireExchange("qwen3", TITLES["qwen3"], prompt.text, [reply], [result], tokens)


def react_text(
    calls: list[WireCall], tools: list[dict], messages: list[dict], choice: str = "auto", answer: str | None = None
) -> WireExchange:
    """The project's ReAct text: one Action per reply, each followed by its Observation turn."""
    _check(calls, messages, answer)
    tok = load_tokenizer()
    prompt = render(Request(messages, tools, "react"), tok)
    if answer is not None:
        text = f"Thought: I now know the final answer\nFinal Answer: {answer}"
        return WireExchange("react", TITLES["react"], prompt.text, [text], [], {"request": prompt.count, "replies": [tok.count(text) + 1], "results": []})
    replies, results, reply_tokens, result_tokens = [], [], [], []
    history = list(messages)
    for c in calls:
        text = call_text(c.name, c.arguments, "react")
        history += [{"role": "assistant", "content": text}, {"role": "tool", "content": c.result}]
        after = render(Request(history, tools, "react", add_generation_prompt=False), tok)
        span = next(s for s in reversed(after.spans) if s.kind == "message")
        replies.append(text)
        results.append(after.span_text(span))
        reply_tokens.append(tok.count(text) + 1)
        result_tokens.append(span.tokens)
    tokens = {"request": prompt.count, "replies": reply_tokens, "results": result_tokens}
    return WireExchange("react", TITLES["react"], prompt.text, replies, results, tokens)


WRITERS = {
    "qwen3": qwen3_text,
    "react": react_text,
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic_messages,
}


def write_call(
    fmt: str, calls: list[WireCall], tools: list[dict], messages: list[dict], choice: str = "auto", answer: str | None = None
) -> WireExchange:
    """One format's exchange for these calls (or, with no calls, for a final `answer`)."""
    if fmt not in WRITERS:
        raise BadInput(f"unknown format {fmt!r}; the formats are {', '.join(FORMATS)}")
    return WRITERS[fmt](calls, tools, messages, choice, answer)


def write_all(
    calls: list[WireCall], tools: list[dict], messages: list[dict], choice: str = "auto", answer: str | None = None
) -> list[WireExchange]:
    """The same calls (or the same final answer) in all five formats, in FORMATS order."""
    return [write_call(fmt, calls, tools, messages, choice, answer) for fmt in FORMATS]


# -- calls from a scripted run -------------------------------------------------------------------
def calls_of_step(step) -> list[WireCall]:
    """The calls of one harness step that an API could carry: each block whose JSON names a tool.

    A block that is not valid JSON has no name or arguments to write, so no API form; a call
    that failed a later check (an unknown name, a wrong type) still has one, and its error goes
    back as its result.
    """
    calls = []
    for result, block in zip(step.results, step.parse.blocks):
        if result.ok:
            calls.append(WireCall(result.name, result.arguments, result.text))
            continue
        if step.parse.style == "react":
            value, problem = load_strict_json(block.text)
            name = _react_action_name(step.turn.text)
            if problem is None and isinstance(value, dict) and name:
                calls.append(WireCall(name, value, result.text, True))
            continue
        value, problem = load_strict_json(block.text.strip())
        if problem is None and isinstance(value, dict) and isinstance(value.get("name"), str) and isinstance(value.get("arguments"), dict):
            calls.append(WireCall(value["name"], value["arguments"], result.text, True))
    return calls


def _react_action_name(text: str) -> str | None:
    found = ACTION_PATTERN.search(text)
    return found.group(1).strip() if found else None


@dataclass(frozen=True)
class StepExchanges:
    """The calls of one step of a scripted run, in every format."""

    step: int  # 0-based index of the model call in the run
    calls: list[WireCall]  # [] for the final answer
    exchanges: list[WireExchange]  # in FORMATS order
    answer: str | None = None  # the final answer's text, for the step that ends the run


def scenario_exchanges(name: str, style: str = "native", choice: str | None = None) -> list[StepExchanges]:
    """Every step of a scripted scenario that has a call an API could carry, and its final answer, in all five formats.

    Each request carries the scenario's opening messages, so the formats stay side by side
    and short; the earlier calls of the run are not replayed in each API's history form.
    """
    scenario = load_scenario(name)
    choice = choice or scenario.tool_choice
    run = run_scenario(scenario, style)
    written = []
    for index, step in enumerate(run.steps):
        calls = calls_of_step(step)
        if calls:
            written.append(StepExchanges(index, calls, write_all(calls, scenario.tools, scenario.messages, choice)))
        elif step.parse.final and not step.parse.returned_as_text and step.parse.answer:
            answer = step.parse.answer
            written.append(StepExchanges(index, [], write_all([], scenario.tools, scenario.messages, choice, answer), answer))
    return written
