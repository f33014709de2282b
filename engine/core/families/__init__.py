"""Model families beside Qwen3, one file each behind a registry: a name → its Family object.

Like the styles (`engine.core.styles`), every module here that defines `FAMILY` is registered
when the package loads. `render_family` renders a request with a family's own renderer and
labels the result; `price_tools` is what the tools add, split into definitions and
instructions; `parse_family` reads a turn in the family's own call format.
"""

from __future__ import annotations

from ...errors import BadInput
from ..parse import ParseResult
from ..plugins import register_package_plugins
from .base import Family, Opener, Rendering, ToolsPrice, count_spans, decode_pieces, label_spans

FAMILIES: dict[str, Family] = {}
DEFAULT_FAMILY = "qwen3"


def register_family(family: Family) -> Family:
    if not family.name:
        raise BadInput(f"{type(family).__name__} has no name: set `name` to the key --family will take")
    FAMILIES[family.name] = family
    ordered = sorted(FAMILIES.values(), key=lambda f: (f.order, f.name))
    FAMILIES.clear()
    FAMILIES.update((f.name, f) for f in ordered)
    return family


def family_names() -> tuple[str, ...]:
    return tuple(FAMILIES)


def get_family(name: str) -> Family:
    if name not in FAMILIES:
        raise BadInput(f"family must be one of {', '.join(FAMILIES)}, not {name!r}")
    return FAMILIES[name]


def family_prompt_ids(family: Family, messages: list[dict], tools: list[dict]) -> list[int]:
    """The family's renderer's ids, or a BadInput that says what the maker's renderer refused (mistral-common
    checks names and schemas itself)."""
    try:
        return family.prompt_ids(messages, tools)
    except BadInput:
        raise
    except Exception as error:  # each maker's package raises its own kinds
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise BadInput(f"{family.label}'s renderer ({family.renderer}) refuses this request: {first}") from error


def render_family(name: str, messages: list[dict], tools: list[dict]) -> Rendering:
    """The prompt as the family's renderer makes it, with its token texts and labelled spans."""
    family = get_family(name)
    # escaped here as the renderer escapes them, so that the tools' spans are found in the text
    messages, tools = family.escape_outside_text(messages, tools)
    ids = family_prompt_ids(family, messages, tools)
    text, tokens, starts = decode_pieces(family, ids)
    spans = count_spans(label_spans(text, family.tool_spans(text, tools) if tools else []), starts)
    return Rendering(family.name, text, ids, tokens, starts, spans)


def price_tools(name: str, messages: list[dict], tools: list[dict]) -> ToolsPrice:
    """Prompt tokens with the tools minus without them, and how many of those are the definitions."""
    with_tools = render_family(name, messages, tools)
    without = family_prompt_ids(get_family(name), messages, [])
    total = with_tools.count - len(without)
    definitions = sum(s.tokens for s in with_tools.spans if s.kind == "tool")
    return ToolsPrice(name, total, definitions, total - definitions)


def call_tokens(name: str, tool: str, arguments: dict) -> tuple[str, list[int], list[str]]:
    """A call written in the family's format: its text, its ids, each token's text."""
    family = get_family(name)
    text = family.write_call(tool, arguments)
    ids = family.encode(text)
    return text, ids, [family.token_text(i) for i in ids]


def parse_family(name: str, text: str, tools: list[dict]) -> ParseResult:
    return get_family(name).parse(text, tools)


register_package_plugins(__name__, __path__, "FAMILY", Family, register_family)

__all__ = [
    "DEFAULT_FAMILY",
    "FAMILIES",
    "Family",
    "Opener",
    "Rendering",
    "ToolsPrice",
    "call_tokens",
    "family_names",
    "get_family",
    "parse_family",
    "price_tools",
    "register_family",
    "render_family",
]
