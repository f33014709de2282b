"""The call formats, one file each behind one registry: a name → its CallFormat object.

Every module of this package that defines `FORMAT` is imported and registered when the package
loads (as vLLM's `ToolParserManager` keeps one parser per file), so a new format or model family
is one new file here, its assets and its test. Qwen3 native and ReAct on Qwen3 are two entries
like the others; what sets them apart is their flags (`in_lessons`, `constrained`, …), which
pages and the command line read instead of names.

`render_tokens` renders a request with a format's own renderer and labels the result;
`price_tools` is what the tools add, split into definitions and instructions; `parse_turn`
reads a turn in a format; `find_name_token` finds where a written call names its tool.
"""

from __future__ import annotations

from ...errors import BadInput
from ..parse import PARSE_POLICIES, ParseResult
from .base import CallFormat, Opener, Rendering, Span, ToolsPrice, count_spans, decode_pieces, label_spans
from .registry import Registry

FORMATS: Registry[CallFormat] = Registry("call format", key=lambda f: f.name)


def get_format(name: str) -> CallFormat:
    """The format called `name` (a family's name stands for the format its maker trained it on: qwen3 is native),
    or an error that lists the formats there are."""
    if name not in FORMATS and name in families():
        return families()[name]
    return FORMATS.get(name)


def lesson_formats() -> list[CallFormat]:
    """The formats the lessons switch between (Qwen3's template, labelled spans), in order."""
    return FORMATS.where(lambda f: f.in_lessons)


def lesson_format_names() -> tuple[str, ...]:
    """Their names: what --style and the sidebar's switch offer."""
    return tuple(f.name for f in lesson_formats())


def family_formats() -> list[CallFormat]:
    """One format per model family, the one its maker trained it on, in order: what lesson 8 and --family list."""
    return FORMATS.where(lambda f: f.maker_format)


def families() -> dict[str, CallFormat]:
    """family -> the format its maker trained it on, in order."""
    return {f.family: f for f in family_formats()}


def family_names() -> tuple[str, ...]:
    return tuple(families())


def format_names() -> tuple[str, ...]:
    """Every name `get_format` takes, in the registry's order: each format's name, after its family's name where a
    family stands for it under another (qwen3, native, react, qwen3-coder, …). What --format offers."""
    names: dict[str, None] = {}
    for fmt in FORMATS.values():
        if fmt.maker_format:
            names[fmt.family] = None
        names[fmt.name] = None
    return tuple(names)


def format_of_family(family: str) -> CallFormat:
    """The format a family's maker trained its models on, or an error that lists the families there are."""
    for fmt in family_formats():
        if fmt.family == family:
            return fmt
    raise BadInput(f"family must be one of {', '.join(family_names())}, not {family!r}")


def constrained_format() -> CallFormat:
    """The lesson format engine.constrain's grammar holds (Qwen3 native): what the lessons on masks draw in."""
    return next(f for f in lesson_formats() if f.constrained)


def other_lesson_format(name: str) -> str:
    """The next lesson format after `name`, in order (the first after the last): what a "switch" button turns to."""
    names = lesson_format_names()
    return names[(names.index(get_format(name).name) + 1) % len(names)]


def parse_turn(
    text: str, tools: list[dict], style: str = "native", policy: str = "per-block", recover_bare: bool = False
) -> ParseResult:
    """Calls and errors of one assistant turn, in the named format, under one of its policies."""
    fmt = get_format(style)
    if policy not in fmt.policies:
        known = PARSE_POLICIES if policy not in PARSE_POLICIES else fmt.policies
        raise BadInput(f"{fmt.label} is read under the {' or '.join(known)} policy, not {policy!r}")
    return fmt.parse(text, tools, policy, recover_bare)


def find_name_token(tokens: list[str], style: str = "native") -> int | None:
    """The index of the token that holds the first character of the tool's name in a written call.

    `tokens` are a turn's token texts in order; the name starts after the format's name marker
    (`"name": "` natively, `Action: ` in ReAct). None when the turn names no tool (prose, or a
    call cut off before it).
    """
    written = "".join(tokens)
    marker = get_format(style).name_marker
    if not marker or marker not in written:
        return None
    target, start = written.index(marker) + len(marker), 0
    for index, text in enumerate(tokens):
        if start <= target < start + len(text):
            return index
        start += len(text)
    return None


def family_prompt_ids(fmt: CallFormat, messages: list[dict], tools: list[dict]) -> list[int]:
    """The format's renderer's ids, or a BadInput that says what the maker's renderer refused (mistral-common
    checks names and schemas itself)."""
    try:
        return fmt.prompt_ids(messages, tools)
    except BadInput:
        raise
    except Exception as error:  # each maker's package raises its own kinds
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise BadInput(f"{fmt.display_family}'s renderer ({fmt.renderer}) refuses this request: {first}") from error


def render_tokens(name: str, messages: list[dict], tools: list[dict]) -> Rendering:
    """The prompt as the format's renderer makes it, with its token texts and labelled spans."""
    fmt = get_format(name)
    # escaped here as the renderer escapes them, so that the tools' spans are found in the text
    messages, tools = fmt.escape_outside_text(messages, tools)
    ids = family_prompt_ids(fmt, messages, tools)
    text, tokens, starts = decode_pieces(fmt, ids)
    spans, _ = count_spans(label_spans(text, fmt.tool_spans(text, tools) if tools else []), starts)
    return Rendering(fmt.family, text, ids, tokens, starts, spans)


def price_tools(name: str, messages: list[dict], tools: list[dict]) -> ToolsPrice:
    """Prompt tokens with the tools minus without them, and how many of those are the definitions."""
    with_tools = render_tokens(name, messages, tools)
    without = family_prompt_ids(get_format(name), messages, [])
    total = with_tools.count - len(without)
    definitions = sum(s.tokens for s in with_tools.spans if s.kind == "tool")
    return ToolsPrice(get_format(name).family, total, definitions, total - definitions)


def call_tokens(name: str, tool: str, arguments: dict) -> tuple[str, list[int], list[str]]:
    """A call written in the format: its text, its ids, each token's text."""
    fmt = get_format(name)
    text = fmt.write_call(tool, arguments)
    ids = fmt.encode(text)
    return text, ids, [fmt.token_text(i) for i in ids]


def check_title(style: str, check: str) -> str:
    """A check of the format's parser in words (each format names its own markers)."""
    return get_format(style).check_title(check)


FORMATS.load(__name__, __path__, "FORMAT", CallFormat)

__all__ = [
    "FORMATS",
    "CallFormat",
    "Opener",
    "Rendering",
    "Span",
    "ToolsPrice",
    "call_tokens",
    "check_title",
    "constrained_format",
    "families",
    "family_formats",
    "family_names",
    "find_name_token",
    "format_names",
    "format_of_family",
    "get_format",
    "lesson_format_names",
    "lesson_formats",
    "other_lesson_format",
    "parse_turn",
    "price_tools",
    "render_tokens",
]
