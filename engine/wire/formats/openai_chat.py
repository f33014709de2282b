"""OpenAI Chat Completions (https://platform.openai.com/docs/api-reference/chat).

`tools` of `{"type": "function", "function": {...}}`; the reply's `message.tool_calls`, each
with an `id`, `"type": "function"` and `function.arguments` as a JSON-encoded *string*; each
result a `{"role": "tool", "tool_call_id", "content"}` message.
"""

from __future__ import annotations

import copy
import json

from .base import NAME, WireCall, WireExchange, WireFormat, check_exchange, function_of, make_id

OPENAI_MODEL = "gpt-4o"  # an example model name the request bodies carry


class OpenAIChat(WireFormat):
    key = "openai-chat"
    title = "OpenAI Chat Completions"
    tab = "OpenAI Chat"
    order = 2
    tool_choice = {
        "auto": "auto",
        "required": "required",
        "none": "none",
        "named": {"type": "function", "function": {"name": NAME}},
    }  # noqa: RUF012
    id_prefix, id_length = "call_", 24
    differences = {  # noqa: RUF012
        "where the call is written": "message.tool_calls, beside (or instead of) content",
        "arguments": "a string holding JSON (function.arguments): parse it yourself",
        "how a result finds its call": "by id: tool_call_id = tool_calls[i].id",
        "the result goes back as": 'one {"role": "tool"} message per result',
        "parallel calls": "several entries in tool_calls (parallel_tool_calls: false turns it off)",
        "the reply says it called a tool": 'finish_reason: "tool_calls"',
        "tool_choice: auto / required / none / one tool": 'auto / required / none / {"type": "function", "function": {"name"}}',
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
        request = {
            "model": OPENAI_MODEL,
            "messages": [{"role": m["role"], "content": m.get("content", "")} for m in messages],
            "tools": [{"type": "function", "function": function_of(t)} for t in tools],
            "tool_choice": self.tool_choice_for(choice),
        }
        if answer is not None:
            message = {"role": "assistant", "content": answer}
            return WireExchange(self.key, self.title, request, [self._reply(message, "stop")], [])
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": ids[i],
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)},
                }
                for i, c in enumerate(calls)
            ],
        }
        # the next request re-sends the assistant message, then one tool message per call
        results = [{"role": "tool", "tool_call_id": ids[i], "content": c.result} for i, c in enumerate(calls)]
        return WireExchange(
            self.key,
            self.title,
            request,
            [self._reply(message, "tool_calls")],
            [[copy.deepcopy(message), *results]],
            ids=ids,
        )

    def _reply(self, message: dict, finish: str) -> dict:
        return {
            "id": make_id("chatcmpl-", 0, 29),
            "object": "chat.completion",
            "model": OPENAI_MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }


FORMAT = OpenAIChat()
