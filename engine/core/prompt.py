"""Render a request as the model sees it, natively or as ReAct, with labelled spans.

Native: the tokenizer's own Qwen3 chat template (`tokenizer.render_chat`), byte for byte.
ReAct: our own system prose (each tool with its parameters, then the Thought / Action /
Action Input / Observation / Final Answer protocol of Yao et al., arXiv 2210.03629), rendered
inside the same chat template with no `tools=`, so both styles are counted by one tokenizer.

Every token of the prompt belongs to exactly one span (the span holding its first
character), so the spans' token counts add up to the prompt's count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..errors import BadInput
from .tokenizer import QwenTokenizer, TokenPiece, load_tokenizer
from .tooldefs import tool_name

STYLES = ("native", "react")


@dataclass
class Request:
    """What a harness sends for one model call."""

    messages: list[dict]
    tools: list[dict] = field(default_factory=list)
    style: str = "native"  # "native" (Qwen's <tool_call> template) or "react"
    enable_thinking: bool = False
    add_generation_prompt: bool = True


@dataclass(frozen=True)
class Span:
    """A labelled stretch of the prompt text."""

    label: str  # "template", "tool count_letter", "user message 1", "generation prompt", ...
    kind: str  # "template" | "tool" | "message" | "generation"
    start: int  # character offsets into Prompt.text
    end: int
    tokens: int = 0
    message_index: int | None = None


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: its text, its tokens, and which span each token belongs to."""

    style: str
    text: str
    ids: list[int]
    pieces: list[TokenPiece]
    spans: list[Span]
    token_spans: list[int]  # for each token, the index of its span

    @property
    def count(self) -> int:
        return len(self.ids)

    def span_text(self, span: Span) -> str:
        return self.text[span.start : span.end]

    def conversation_spans(self) -> list[Span]:
        """The spans from the first message after the system turn on: the conversation, without the tool definitions."""
        first = next(i for i, s in enumerate(self.spans) if s.kind == "message" and s.label != "system message 0")
        return self.spans[first:]

    def message_spans(self, indices) -> list[Span]:
        """The spans that render the messages at `indices` (their place in the request's messages)."""
        wanted = set(indices)
        return [s for s in self.spans if s.kind == "message" and s.message_index in wanted]

    def message_tokens(self, indices) -> int:
        """How many of this prompt's tokens the messages at `indices` take."""
        return sum(s.tokens for s in self.message_spans(indices))

    def message_text(self, indices) -> str:
        """The exact text the messages at `indices` add to this prompt, template markers included."""
        return "".join(self.span_text(s) for s in self.message_spans(indices))


# -- ReAct prose --------------------------------------------------------------------------
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


# -- rendering ----------------------------------------------------------------------------
def render(request: Request, tokenizer: QwenTokenizer | None = None) -> Prompt:
    """The prompt of one model call, as text, token ids and labelled spans."""
    if request.style not in STYLES:
        raise BadInput(f"style must be 'native' or 'react', not {request.style!r}")
    tok = tokenizer or load_tokenizer()
    if request.style == "native":
        text, spans = _render_native(request, tok)
    else:
        text, spans = _render_react(request, tok)
    return _count_spans(request.style, text, spans, tok)


def react_messages(messages: list[dict]) -> list[dict]:
    """Messages in ReAct form: a tool result becomes a user turn that starts with "Observation:"."""
    return [
        {"role": "user", "content": f"Observation: {m.get('content', '')}"} if m.get("role") == "tool" else m
        for m in messages
    ]


def _render_native(request: Request, tok: QwenTokenizer) -> tuple[str, list[Span]]:
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
    cursor = _message_spans(text, cursor, messages, first, spans)
    if cursor < len(text):
        spans.append(Span("generation prompt", "generation", cursor, len(text)))
    return text, spans


def _render_react(request: Request, tok: QwenTokenizer) -> tuple[str, list[Span]]:
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
    cursor = _message_spans(text, cursor, [*([{}] * offset), *rest], offset, spans, request.messages)
    if cursor < len(text):
        spans.append(Span("generation prompt", "generation", cursor, len(text)))
    return text, spans


def _message_spans(
    text: str, cursor: int, messages: list[dict], first: int, spans: list[Span], originals: list[dict] | None = None
) -> int:
    """Append one span per message from `first` on, walking the rendered text from `cursor`.

    `originals` gives the roles for the labels when the rendered messages were rewritten
    (ReAct turns a tool result into a user "Observation:" turn).
    """
    for index in range(first, len(messages)):
        message = messages[index]
        role = message.get("role")
        shown = (originals or messages)[index].get("role")
        label = f"{'tool result' if shown == 'tool' else str(shown) + ' message'} {index}"
        start = cursor
        if role == "tool":
            # consecutive tool results share one user turn, each in its own <tool_response>
            if index == 0 or messages[index - 1].get("role") != "tool":
                cursor += len("<|im_start|>user")
            cursor += len("\n<tool_response>\n" + str(message.get("content", "")) + "\n</tool_response>")
            if index == len(messages) - 1 or messages[index + 1].get("role") != "tool":
                cursor += len("<|im_end|>\n")
        else:
            found = text.find("<|im_end|>\n", cursor)
            cursor = len(text) if found < 0 else found + len("<|im_end|>\n")
        spans.append(Span(label, "message", start, cursor, message_index=index))
    return cursor


def _count_spans(style: str, text: str, spans: list[Span], tok: QwenTokenizer) -> Prompt:
    pieces = tok.encode_and_show_work(text)
    # each token belongs to the span that holds its first character
    owners: list[int] = []
    counts = [0] * len(spans)
    which = 0
    for piece in pieces:
        while which + 1 < len(spans) and piece.start >= spans[which].end:
            which += 1
        owners.append(which)
        counts[which] += 1
    counted = [
        Span(s.label, s.kind, s.start, s.end, counts[i], s.message_index) for i, s in enumerate(spans)
    ]
    return Prompt(style, text, [p.id for p in pieces], pieces, counted, owners)


def count_tools_tokens(request: Request, tokenizer: QwenTokenizer | None = None) -> int:
    """Prompt tokens with the tools minus the same prompt without them."""
    tok = tokenizer or load_tokenizer()
    bare = Request(request.messages, [], request.style, request.enable_thinking, request.add_generation_prompt)
    return render(request, tok).count - render(bare, tok).count
