"""Anthropic Messages (https://docs.anthropic.com/en/api/messages and https://docs.anthropic.com/en/docs/build-with-claude/tool-use).

Tools with `input_schema`; `tool_use` content blocks `{type, id, name, input}` whose `input` is
an *object*, with `stop_reason: "tool_use"`; the results as `tool_result` blocks in one user
message, each naming its `tool_use_id`.
"""

from __future__ import annotations

import copy

from .base import NAME, WireCall, WireExchange, WireFormat, check_exchange, function_of, make_id, split_system

ANTHROPIC_MODEL = "claude-opus-4-6"  # the model id of Anthropic's own tool-use example (its Tool use page)
ANTHROPIC_MAX_TOKENS = 1024  # Anthropic requires max_tokens in every request


class AnthropicMessages(WireFormat):
    key = "anthropic"
    title = "Anthropic Messages"
    tab = "Anthropic"
    order = 4
    tool_choice = {
        "auto": {"type": "auto"},
        "required": {"type": "any"},
        "none": {"type": "none"},
        "named": {"type": "tool", "name": NAME},
    }  # noqa: RUF012
    id_prefix, id_length = "toolu_01", 22
    differences = {  # noqa: RUF012
        "where the call is written": "tool_use blocks in content",
        "arguments": "an object (input), already parsed",
        "how a result finds its call": "by id: tool_result.tool_use_id = tool_use.id",
        "the result goes back as": "one user message with a tool_result block per result",
        "parallel calls": "several tool_use blocks (disable_parallel_tool_use: true, inside tool_choice, turns it off)",
        "the reply says it called a tool": 'stop_reason: "tool_use"',
        "tool_choice: auto / required / none / one tool": '{"type": "auto"} / {"type": "any"} / {"type": "none"} / {"type": "tool", "name"}',
    }

    def write(
        self,
        calls: list[WireCall],
        tools: list[dict],
        messages: list[dict],
        choice: str = "auto",
        answer: str | None = None,
    ) -> WireExchange:
        check_exchange(calls, messages, answer)
        ids = [self.call_id(i) for i in range(len(calls))]
        system, rest = split_system(messages)
        request: dict = {"model": ANTHROPIC_MODEL, "max_tokens": ANTHROPIC_MAX_TOKENS}
        if system is not None:
            request["system"] = system
        request["messages"] = [{"role": m["role"], "content": m.get("content", "")} for m in rest]
        request["tools"] = [
            {"name": f["name"], "description": f["description"], "input_schema": f["parameters"]}
            for f in map(function_of, tools)
        ]
        request["tool_choice"] = self.tool_choice_for(choice)
        if answer is not None:
            return WireExchange(
                self.key, self.title, request, [self._reply([{"type": "text", "text": answer}], "end_turn")], []
            )
        content = [
            {"type": "tool_use", "id": ids[i], "name": c.name, "input": copy.deepcopy(c.arguments)}
            for i, c in enumerate(calls)
        ]
        # every result goes back in one user message, a tool_result block per tool_use id
        result = {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": ids[i],
                    "content": c.result,
                    **({"is_error": True} if c.is_error else {}),
                }
                for i, c in enumerate(calls)
            ],
        }
        return WireExchange(self.key, self.title, request, [self._reply(content, "tool_use")], [result], ids=ids)

    def _reply(self, content: list, stop: str) -> dict:
        return {
            "id": make_id("msg_01", 0, 22),
            "type": "message",
            "role": "assistant",
            "model": ANTHROPIC_MODEL,
            "content": content,
            "stop_reason": stop,
        }


FORMAT = AnthropicMessages()
