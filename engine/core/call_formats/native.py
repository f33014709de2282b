"""Qwen3 native: Qwen3's own chat template, `<tool_call>` JSON in the reply, `<tool_response>` going back.

The prompt is the tokenizer's own template (`tokenizer.render_chat`), byte for byte; a call is
the JSON object `{"name", "arguments"}` inside `<tool_call>` tags, as the template's
instructions ask; a turn is parsed with vLLM's Qwen block regex and BFCL's checks
(`parse_native`, below; the checks it shares with every format are engine/core/parse.py's). It is Qwen3's entry among the model families, and the
format the lessons start in.
"""

from __future__ import annotations

import json

from ...errors import BadInput
from ..parse import (
    BLOCK_PATTERN,
    EMPTY_BLOCK,
    ENDED_EARLY,
    MAX_CALLS,
    NATIVE_CHECKS,
    NOT_CLOSED,
    NOT_JSON,
    PARSE_POLICIES,
    SERVER_POLICIES,
    Block,
    BlockError,
    Call,
    Check,
    ParseResult,
    check_call_object,
    ends_inside_string,
    finite_float,
    load_strict_json,
    pad_checks,
    split_reasoning,
    too_many_calls,
    tool_map,
)
from ..tokenizer import QwenTokenizer
from ..tooldefs import tool_name
from .base import Opener, Span, message_spans
from .calls import bound_arguments
from .qwen3_template import Qwen3Template


def find_blocks(text: str, start: int = 0, limit: int | None = None) -> list[tuple[str, bool, int, int]]:
    """(inner text, closed, start, end) of each <tool_call> block from `start`, by vLLM's Qwen regex
    (at most `limit` of them)."""
    found = []
    for m in BLOCK_PATTERN.finditer(text, start):
        if limit is not None and len(found) >= limit:
            break
        found.append((m.group(1) if m.group(1) is not None else m.group(2), m.group(1) is not None, m.start(), m.end()))
    return found


def check_block(index: int, inner: str, closed: bool, start: int, end: int, tools: dict[str, dict]) -> Block:
    checks: list[Check] = []
    if not closed:
        return Block(
            index, inner, start, end, pad_checks([Check("closed", False, NOT_CLOSED)], NATIVE_CHECKS), None, NOT_CLOSED
        )
    checks.append(Check("closed", True))
    body = inner.strip()
    if not body:
        checks.append(Check("json", False, EMPTY_BLOCK))
        return Block(index, inner, start, end, pad_checks(checks, NATIVE_CHECKS), None, EMPTY_BLOCK)
    value, error = load_strict_json(body)
    if error == NOT_JSON and ends_inside_string(body):
        # the regex stopped at a </tool_call> inside a string: say so, not just "not JSON"
        error = ENDED_EARLY
    if error:
        checks.append(Check("json", False, error))
        return Block(index, inner, start, end, pad_checks(checks, NATIVE_CHECKS), None, error)
    checks.append(Check("json", True))
    more, call, error = check_call_object(value, tools)
    checks.extend(more)
    if call is not None:
        call = Call(call.name, call.arguments, index)
    return Block(index, inner, start, end, pad_checks(checks, NATIVE_CHECKS), call, error)


def _bare_call(text: str, tools: dict[str, dict]) -> tuple[str, int] | None:
    """A bare JSON call at the start of a reply naming a supplied tool (the Qwen2.5-Coder case of [[tool-calls-cant-come-out-malformed]])."""
    start = len(text) - len(text.lstrip())
    if not text[start:].startswith("{"):
        return None
    try:
        value, end = json.JSONDecoder(strict=True, parse_float=finite_float).raw_decode(text, start)
    except (json.JSONDecodeError, ValueError, RecursionError):  # _JsonProblem is a ValueError
        return None
    if isinstance(value, dict) and isinstance(value.get("name"), str) and value["name"] in tools:
        return text[start:end], end
    return None


def parse_native(text: str, tools: list[dict], policy: str = "per-block", recover_bare: bool = False) -> ParseResult:
    if policy not in PARSE_POLICIES:
        raise BadInput(f"policy must be one of {', '.join(PARSE_POLICIES)}, not {policy!r}")
    known = tool_map(tools)
    reasoning, content = split_reasoning(text)
    found = find_blocks(text, content, MAX_CALLS + 1)
    if not found and recover_bare and reasoning is None:
        bare = _bare_call(text, known)
        if bare is not None:
            start = len(text) - len(text.lstrip())
            found = [(bare[0], True, start, bare[1])]
    if not found:
        return ParseResult("native", policy, [], [], True, [], answer=text[content:].strip(), reasoning=reasoning)
    excess = found[MAX_CALLS:]
    if policy in SERVER_POLICIES:
        # vLLM's regex takes a final block with no </tool_call> whole, and json.loads decides: whole JSON is a
        # call; one cut off inside its JSON stays "not closed" (and the turn goes back as text)
        found = [
            (inner, closed or load_strict_json(inner.strip())[1] is None, start, end)
            for inner, closed, start, end in found
        ]
    blocks = [check_block(i, *item, known) for i, item in enumerate(found[:MAX_CALLS])]
    if excess:
        # the calls past the limit are counted (cheaply), reported as one error, and never run
        count = MAX_CALLS + sum(1 for _ in BLOCK_PATTERN.finditer(text, excess[0][2]))
        error = too_many_calls(count)
        blocks.append(
            Block(
                MAX_CALLS,
                text[excess[0][2] :],
                excess[0][2],
                len(text),
                [Check("count", False, error), *(Check(n, None) for n in NATIVE_CHECKS)],
                None,
                error,
            )
        )
    errors = [BlockError(b.index, b.error) for b in blocks if b.error]
    calls = [b.call for b in blocks if b.call is not None]
    # vLLM's rule: one block that is not valid JSON and the whole turn is returned as text
    json_failed = any(c.name in ("closed", "json") and c.passed is False for b in blocks for c in b.checks)
    if policy in SERVER_POLICIES and json_failed:
        return ParseResult(
            "native", policy, [], errors, True, blocks, returned_as_text=True, answer=text.strip(), reasoning=reasoning
        )
    return ParseResult("native", policy, calls, errors, False, blocks, reasoning=reasoning)


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
