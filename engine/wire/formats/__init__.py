"""One tool call, written in every wire format: Qwen3's text, ReAct's text, and public APIs' JSON; one file per format behind a registry.

A call (a name, its arguments, and the result that goes back) becomes each format's request,
the model's reply and the returned result. Each format is one module of this package that
defines `FORMAT` (a `base.WireFormat`): its writer, its `tool_choice` words and its answers to
the questions of `base.ASPECTS`. Every such module is imported and registered when the package
loads (as vLLM's `ToolParserManager` keeps a dict of name → parser, one parser per file), so a
new format is one new file here and its test; the tables a page draws are built from the
registry (`engine.core.call_formats.registry.Registry`, the class the call formats use too).
"""

from __future__ import annotations

from ...core.call_formats.registry import Registry
from ...errors import BadInput
from .base import ASPECTS, NAME, WireCall, WireExchange, WireFormat, make_id


def check_format(fmt: WireFormat) -> None:
    """Refuse a format that has no title or leaves a question of ASPECTS unanswered."""
    if not fmt.title:
        raise BadInput(f"{type(fmt).__name__} needs a title")
    missing = [a for a in ASPECTS if a not in fmt.differences]
    if missing:
        raise BadInput(f"format {fmt.key!r} says nothing about: {', '.join(missing)} (fill its `differences`)")


REGISTRY: Registry[WireFormat] = Registry("format", key=lambda f: f.key, check=check_format)


def register_format(fmt: WireFormat) -> WireFormat:
    """Add a format to the registry, after checking it answers every question of ASPECTS."""
    return REGISTRY.register(fmt)


def list_formats() -> list[WireFormat]:
    """The registered formats, in order."""
    return REGISTRY.values()


def format_names() -> tuple[str, ...]:
    return REGISTRY.names()


def get_format(key: str) -> WireFormat:
    """The format called `key`, or an error that lists the formats there are."""
    return REGISTRY.get(key)


def text_format_for(style: str) -> WireFormat | None:
    """The text format whose prompt is this style's (qwen3 for native, react for ReAct); None if there is none."""
    return next((f for f in list_formats() if f.style == style), None)


def tool_choice_formats() -> list[WireFormat]:
    """The formats that have a tool_choice field."""
    return [f for f in list_formats() if f.tool_choice is not None]


def call_id(fmt: str, index: int) -> str:
    """The id of call `index` as the format writes it (Responses shares OpenAI's call_ form)."""
    return get_format(fmt).call_id(index)


def tool_choice_for(fmt: str, choice: str = "auto") -> object:
    """Our tool_choice (auto, required, none, or a tool's name) in an API's words."""
    if fmt not in REGISTRY or REGISTRY.get(fmt).tool_choice is None:
        names = ", ".join(f.key for f in tool_choice_formats())
        raise BadInput(f"{fmt} has no tool_choice field; the APIs with one are {names}")
    return REGISTRY.get(fmt).tool_choice_for(choice)


def differences() -> list[dict]:
    """What differs: one row per question of ASPECTS, one column per format."""
    return [{"aspect": aspect, **{f.key: f.differences[aspect] for f in list_formats()}} for aspect in ASPECTS]


def write_call(
    fmt: str,
    calls: list[WireCall],
    tools: list[dict],
    messages: list[dict],
    choice: str = "auto",
    answer: str | None = None,
) -> WireExchange:
    """One format's exchange for these calls (or, with no calls, for a final `answer`)."""
    return get_format(fmt).write(calls, tools, messages, choice, answer)


def write_all(
    calls: list[WireCall], tools: list[dict], messages: list[dict], choice: str = "auto", answer: str | None = None
) -> list[WireExchange]:
    """The same calls (or the same final answer) in every format, in order."""
    return [f.write(calls, tools, messages, choice, answer) for f in list_formats()]


REGISTRY.load(__name__, __path__, "FORMAT", WireFormat)

__all__ = [
    "ASPECTS",
    "NAME",
    "REGISTRY",
    "WireCall",
    "WireExchange",
    "WireFormat",
    "call_id",
    "differences",
    "format_names",
    "get_format",
    "list_formats",
    "make_id",
    "register_format",
    "text_format_for",
    "tool_choice_for",
    "tool_choice_formats",
    "write_all",
    "write_call",
]
