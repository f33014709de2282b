"""Qwen3 native: Qwen3's own chat template, `<tool_call>` JSON in the reply, `<tool_response>` going back.

The prompt is the tokenizer's own template (`tokenizer.render_chat`), byte for byte; a call is
the JSON object `{"name", "arguments"}` inside `<tool_call>` tags, as the template's
instructions ask; a turn is parsed with vLLM's Qwen block regex and BFCL's checks
(`engine.core.parse.parse_native`). It is Qwen3's entry among the model families, and the
format the lessons start in.
"""

from __future__ import annotations

import json

from ..parse import PARSE_POLICIES, Block, ParseResult, load_strict_json, parse_native
from ..tokenizer import QwenTokenizer
from ..tooldefs import tool_name
from .base import Opener, Span, message_spans
from .calls import bound_arguments
from .qwen3_template import Qwen3Template


class NativeFormat(Qwen3Template):
    name = "native"
    label = "Native"
    noun = "native"
    help = "Qwen3's own <tool_call> JSON"
    order = 0
    parallel = True
    constrained = True
    special_opener = True
    policies = PARSE_POLICIES  # server: the vllm policy, under the name every family shares
    opener = Opener("<tool_call>", "a special token")
    parser_reference = "vLLM hermes / qwen3 tool parser"
    name_marker = '"name": "'
    name_prefix = '<tool_call>\n{"name": "'
    tag_grammar = False  # engine.constrain.grammar holds its calls, over Qwen3's own tokenizer (constrained)

    def render(self, request, tok: QwenTokenizer) -> tuple[str, list[Span]]:
        messages = request.messages
        text = tok.render_chat(messages, request.tools, request.add_generation_prompt, request.enable_thinking)
        spans: list[Span] = []
        cursor = 0
        first = 0
        has_system = bool(messages) and messages[0].get("role") == "system"
        if request.tools:
            # the system turn the template writes: optional system text, instructions, one line per tool
            header = "<|im_start|>system\n"
            spans.append(Span("template", "template", 0, len(header)))
            cursor = len(header)
            if has_system:
                own = messages[0].get("content", "") + "\n\n"
                spans.append(Span("system message 0", "message", cursor, cursor + len(own), message_index=0))
                cursor += len(own)
                first = 1
            open_at = text.index("\n<tools>", cursor) + len("\n<tools>")
            spans.append(Span("template", "template", cursor, open_at))
            cursor = open_at
            for tool in request.tools:
                line_end = text.index("\n", cursor + 1)
                spans.append(Span(f"tool {tool_name(tool) or '?'}", "tool", cursor, line_end))
                cursor = line_end
            close = text.index("<|im_end|>\n", cursor) + len("<|im_end|>\n")
            spans.append(Span("template", "template", cursor, close))
            cursor = close
        cursor = message_spans(text, cursor, messages, first, spans)
        if cursor < len(text):
            spans.append(Span("generation prompt", "generation", cursor, len(text)))
        return text, spans

    def write_call(self, name: str, arguments: dict) -> str:
        body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
        return f"<tool_call>\n{body}\n</tool_call>"

    def write_answer(self, answer: str) -> str:
        return answer

    def parse(self, text: str, tools: list[dict], policy: str = "per-block", recover_bare: bool = False) -> ParseResult:
        return bound_arguments(
            parse_native(text, tools, policy, recover_bare), lambda block: self.written_call(block, text)
        )

    def result_text(self, result: str) -> str:
        return f"<tool_response>\n{result}\n</tool_response>"

    def written_call(self, block: Block, turn: str) -> tuple[str, dict] | None:
        value, problem = load_strict_json(block.text.strip())
        if (
            problem is None
            and isinstance(value, dict)
            and isinstance(value.get("name"), str)
            and isinstance(value.get("arguments"), dict)
        ):
            return value["name"], value["arguments"]
        return None


FORMAT = NativeFormat()
