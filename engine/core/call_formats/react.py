"""ReAct on Qwen3: Thought / Action / Action Input prose in the reply, `Observation:` going back.

Our own system prose (each tool with its parameters, then the Thought / Action / Action Input /
Observation / Final Answer protocol of Yao et al., "ReAct: Synergizing Reasoning and Acting in
Language Models", arXiv 2210.03629), rendered inside the same Qwen3 chat template with no
`tools=`, so both styles are counted by one tokenizer. One Action per reply; a turn is parsed
by `parse_react`, below (the checks it shares with every format are engine/core/parse.py's).
"""

from __future__ import annotations

import json
import re

from ..parse import (
    RAW_NEWLINE,
    REACT_BOTH,
    REACT_CHECKS,
    REACT_FENCED,
    REACT_INPUT_NOT_OBJECT,
    REACT_NO_ACTION,
    REACT_NO_INPUT,
    REACT_NOT_JSON,
    Block,
    BlockError,
    Call,
    Check,
    ParseResult,
    check_arguments,
    load_strict_json,
    pad_checks,
    react_two_actions,
    tool_map,
    unknown_tool,
)
from ..tokenizer import QwenTokenizer
from ..tooldefs import tool_name
from .base import Opener, Span, message_spans
from .calls import bound_arguments
from .qwen3_template import Qwen3Template

REACT_INTRO = "Answer the following questions as best you can. You have access to the following tools:\n"
REACT_PROTOCOL = (
    "\nUse the following format:\n\n"
    "Question: the input question you must answer\n"
    "Thought: you should always think about what to do\n"
    "Action: the action to take, one of [{names}]\n"
    "Action Input: the input to the action, as one JSON object on one line\n"
    "Observation: the result of the action\n"
    "... (this Thought/Action/Action Input/Observation can repeat N times)\n"
    "Thought: I now know the final answer\n"
    "Final Answer: the final answer to the original input question\n\n"
    "Begin!"
)
CALL_THOUGHT = "Thought: I should use a tool."
ANSWER_THOUGHT = "Thought: I now know the final answer"


def describe_type(schema: dict) -> str:
    """A JSON Schema type in words: "string", "array of integer", "one of: a, b"."""
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return "one of: " + ", ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        kind = " or ".join(str(k) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"array of {describe_type(schema['items'])}"
    return str(kind)


def describe_tool_react(tool: dict) -> str:
    """One tool in ReAct prose: its name and description, then one line per parameter."""
    fn = tool.get("function", tool)
    params = fn.get("parameters") or {}
    required = set(params.get("required") or [])
    lines = [f"\n{fn.get('name', '?')}: {fn.get('description', '').strip()}"]
    props = params.get("properties") or {}
    if props:
        lines.append("  Parameters:")
    for name, schema in props.items():
        need = "required" if name in required else "optional"
        desc = schema.get("description", "") if isinstance(schema, dict) else ""
        lines.append(f"  - {name} ({describe_type(schema)}, {need}){': ' + desc if desc else ''}")
    return "\n".join(lines) + "\n"


def react_messages(messages: list[dict]) -> list[dict]:
    """Messages in ReAct form: a tool result becomes a user turn that starts with "Observation:"."""
    return [
        {"role": "user", "content": FORMAT.result_text(m.get("content", ""))} if m.get("role") == "tool" else m
        for m in messages
    ]


# the rest of the line is taken whole and stripped afterwards: a lazy (.*?) before [ \t]*$ tried
# every split of a long run of spaces (a 40 KB "Action: a      ...b" took 8 s)
ACTION_PATTERN = re.compile(r"^[ \t]*Action[ \t]*:([^\n]*)", re.MULTILINE)
INPUT_PATTERN = re.compile(r"^[ \t]*Action[ \t]*Input[ \t]*:[ \t]*", re.MULTILINE)
FINAL_PATTERN = re.compile(r"^[ \t]*Final[ \t]*Answer[ \t]*:[ \t]*", re.MULTILINE)
OBSERVATION_PATTERN = re.compile(r"^[ \t]*Observation[ \t]*:", re.MULTILINE)


def parse_react(text: str, tools: list[dict]) -> ParseResult:
    known = tool_map(tools)
    # a model may run on and write its own Observation: the harness reads only up to it
    cut = OBSERVATION_PATTERN.search(text)
    reply = text[: cut.start()] if cut else text
    actions = list(ACTION_PATTERN.finditer(reply))
    final = FINAL_PATTERN.search(reply)

    def failed(error: str, start: int = 0, end: int | None = None, body: str = "") -> ParseResult:
        block = Block(
            0,
            body,
            start,
            len(reply) if end is None else end,
            pad_checks([Check("format", False, error)], REACT_CHECKS),
            None,
            error,
        )
        return ParseResult("react", "per-block", [], [BlockError(0, error)], False, [block])

    if final and not actions:
        return ParseResult("react", "per-block", [], [], True, [], answer=reply[final.end() :].strip())
    if not actions:
        return failed(REACT_NO_ACTION)
    if final:
        return failed(REACT_BOTH)
    if len(actions) > 1:
        return failed(react_two_actions(len(actions)))
    action = actions[0]
    given = INPUT_PATTERN.search(reply, action.end())
    if given is None:
        return failed(REACT_NO_INPUT, action.start())
    body = reply[given.end() :].strip()
    start, end = action.start(), len(reply)
    checks = [Check("format", True)]

    def block(error: str | None, call: Call | None = None) -> ParseResult:
        b = Block(0, body, start, end, pad_checks(checks, REACT_CHECKS), call, error)
        if error:
            return ParseResult("react", "per-block", [], [BlockError(0, error)], False, [b])
        return ParseResult("react", "per-block", [call], [], False, [b])

    if body.startswith("```"):
        checks.append(Check("json", False, REACT_FENCED))
        return block(REACT_FENCED)
    value, error = load_strict_json(body)
    if error:
        error = RAW_NEWLINE if error == RAW_NEWLINE else REACT_NOT_JSON
        checks.append(Check("json", False, error))
        return block(error)
    checks.append(Check("json", True))
    name = action.group(1).strip()
    if name not in known:
        error = unknown_tool(name, list(known))
        checks.append(Check("name", False, error))
        return block(error)
    checks.append(Check("name", True))
    if not isinstance(value, dict):
        checks.append(Check("arguments", False, REACT_INPUT_NOT_OBJECT))
        return block(REACT_INPUT_NOT_OBJECT)
    more, error = check_arguments(name, value, known[name])
    checks.extend(more)
    return block(error, None if error else Call(name, value, 0))


class ReactFormat(Qwen3Template):
    name = "react"
    label = "ReAct"
    noun = "ReAct"
    help = "Thought / Action / Action Input lines in plain text"
    order = 1
    parallel = False
    maker_format = False  # Qwen3 was trained on <tool_call>; ReAct is asked for in the prompt's prose
    tag_grammar = False  # a call is prose lines, not a tag around JSON
    policies = ("per-block", "vllm")  # one Action per reply: the two policies agree
    opener = Opener("Action:", "a line of prose")
    renderer = "the site's ReAct prose inside Qwen3's chat template (transformers' Jinja renderer)"
    parser_reference = "engine.core.call_formats.react.parse_react: one Action and its Action Input per reply"
    name_marker = "Action: "
    name_prefix = "Action: "

    def render(self, request, tok: QwenTokenizer) -> tuple[str, list[Span]]:
        messages = react_messages(request.messages)
        has_system = bool(messages) and messages[0].get("role") == "system"
        parts: list[tuple[str, str, str]] = []  # (label, kind, text) of the system content
        if has_system:
            parts.append(("system message 0", "message", messages[0].get("content", "") + "\n\n"))
        if request.tools:
            parts.append(("template", "template", REACT_INTRO))
            for tool in request.tools:
                parts.append((f"tool {tool_name(tool) or '?'}", "tool", describe_tool_react(tool)))
            names = ", ".join(tool_name(t) or "?" for t in request.tools)
            parts.append(("template", "template", REACT_PROTOCOL.format(names=names)))
        rest = messages[1:] if has_system else messages
        if parts:
            # without tools, a ReAct system turn is just the user's own system text
            content = "".join(p[2] for p in parts)
            system = {"role": "system", "content": content if request.tools else content[: -len("\n\n")]}
            rendered_messages = [system, *rest]
        else:
            rendered_messages = list(rest)
        text = tok.render_chat(rendered_messages, None, request.add_generation_prompt, request.enable_thinking)
        spans: list[Span] = []
        cursor = 0
        if parts:
            header = "<|im_start|>system\n"
            spans.append(Span("template", "template", 0, len(header)))
            cursor = len(header)
            content = system["content"]
            for label, kind, part in parts:
                size = min(len(part), len(content) - (cursor - len(header)))
                index = 0 if kind == "message" else None
                spans.append(Span(label, kind, cursor, cursor + size, message_index=index))
                cursor += size
            end = cursor + len("<|im_end|>\n")
            spans.append(Span("template", "template", cursor, end))
            cursor = end
        offset = 1 if has_system else 0
        cursor = message_spans(text, cursor, [*([{}] * offset), *rest], offset, spans, request.messages)
        if cursor < len(text):
            spans.append(Span("generation prompt", "generation", cursor, len(text)))
        return text, spans

    def write_call(self, name: str, arguments: dict) -> str:
        return f"{CALL_THOUGHT}\nAction: {name}\nAction Input: {json.dumps(arguments, ensure_ascii=False)}"

    def write_answer(self, answer: str) -> str:
        return f"{ANSWER_THOUGHT}\nFinal Answer: {answer}"

    def parse(self, text: str, tools: list[dict], policy: str = "per-block", recover_bare: bool = False) -> ParseResult:
        # ReAct has one Action per reply, so the per-block and vLLM policies agree; a bare call is native-only
        return bound_arguments(parse_react(text, tools), lambda block: self.written_call(block, text))

    def read_reply(self, text: str) -> str:
        cut = OBSERVATION_PATTERN.search(text)
        return text[: cut.start()].rstrip() if cut else text

    def result_text(self, result: str) -> str:
        return f"Observation: {result}"

    def written_call(self, block: Block, turn: str) -> tuple[str, dict] | None:
        value, problem = load_strict_json(block.text)
        found = ACTION_PATTERN.search(turn)
        name = found.group(1).strip() if found else None
        if problem is None and isinstance(value, dict) and name:
            return name, value
        return None


FORMAT = ReactFormat()
