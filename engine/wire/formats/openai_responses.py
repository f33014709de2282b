"""OpenAI Responses (https://platform.openai.com/docs/api-reference/responses).

Flattened tools `{"type": "function", "name", "description", "parameters"}`; `function_call`
output items with `call_id`, `name` and string `arguments`; each result a
`function_call_output` input item naming that `call_id` (Responses shares OpenAI's `call_` ids).
"""

from __future__ import annotations

import copy
import json

from .base import NAME, WireCall, WireExchange, WireFormat, check_exchange, function_of, make_id, split_system
from .openai_chat import OPENAI_MODEL


class OpenAIResponses(WireFormat):
    key = "openai-responses"
    title = "OpenAI Responses"
    order = 3
    tool_choice = {"auto": "auto", "required": "required", "none": "none", "named": {"type": "function", "name": NAME}}  # noqa: RUF012
    id_prefix, id_length = "call_", 24
    differences = {  # noqa: RUF012
        "where the call is written": "function_call items in output",
        "arguments": "a string holding JSON (arguments): parse it yourself",
        "how a result finds its call": "by id: function_call_output.call_id = function_call.call_id",
        "the result goes back as": "one function_call_output input item per result",
        "parallel calls": "several function_call items (parallel_tool_calls: false turns it off)",
        "the reply says it called a tool": "output holds function_call items",
        "tool_choice: auto / required / none / one tool": 'auto / required / none / {"type": "function", "name"}',
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
        request: dict = {"model": OPENAI_MODEL}
        if system is not None:
            request["instructions"] = system
        request["input"] = [{"role": m["role"], "content": m.get("content", "")} for m in rest]
        request["tools"] = [{"type": "function", **function_of(t)} for t in tools]
        request["tool_choice"] = self.tool_choice_for(choice)
        if answer is not None:
            text_item = {
                "type": "message",
                "id": make_id("msg_", 0, 24),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": answer, "annotations": []}],
            }
            return WireExchange(self.key, self.title, request, [self._reply([text_item])], [])
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
        # the next request's input carries the function_call items and one output per call_id
        results = [{"type": "function_call_output", "call_id": ids[i], "output": c.result} for i, c in enumerate(calls)]
        return WireExchange(
            self.key, self.title, request, [self._reply(items)], [[*copy.deepcopy(items), *results]], ids=ids
        )

    def _reply(self, output: list) -> dict:
        return {
            "id": make_id("resp_", 0, 24),
            "object": "response",
            "status": "completed",
            "model": OPENAI_MODEL,
            "output": output,
        }


FORMAT = OpenAIResponses()
