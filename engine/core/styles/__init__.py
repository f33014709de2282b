"""The tool-call styles, one file each, behind a registry: a name → its Style object.

Like vLLM's `ToolParserManager` (a dict of name → parser, one parser per file), every module
of this package that defines `STYLE` is imported and registered when the package loads, so a
new style or model family is one new file here and nothing else lists it. `parse_turn` and
`find_name_token` are the two things callers do with a style by name.
"""

from __future__ import annotations

from ...errors import BadInput
from ..parse import ParseResult
from ..plugins import register_package_plugins
from .base import Span, Style

STYLES: dict[str, Style] = {}  # name -> style, in each style's order


def register_style(style: Style) -> Style:
    """Add a style to the registry (a second one under the same name replaces the first)."""
    if not style.name:
        raise BadInput(f"{type(style).__name__} has no name: set the class's `name` to the key --style will take")
    STYLES[style.name] = style
    ordered = sorted(STYLES.values(), key=lambda s: (s.order, s.name))
    STYLES.clear()
    STYLES.update((s.name, s) for s in ordered)
    return style


def load_styles() -> None:
    """Import every module of this package and register the STYLE each one defines."""
    register_package_plugins(__name__, __path__, "STYLE", Style, register_style)


def style_names() -> tuple[str, ...]:
    """The registered styles' names, in order: what --style and the sidebar's switch offer."""
    return tuple(STYLES)


def get_style(name: str) -> Style:
    """The style called `name`, or an error that lists the styles there are."""
    if name not in STYLES:
        raise BadInput(f"style must be {' or '.join(repr(s) for s in STYLES)}, not {name!r}")
    return STYLES[name]


def other_style(name: str) -> str:
    """The next style after `name`, in order (the first after the last): what a "switch" button turns to."""
    names = style_names()
    return names[(names.index(get_style(name).name) + 1) % len(names)]


def parse_turn(text: str, tools: list[dict], style: str = "native", policy: str = "per-block", recover_bare: bool = False) -> ParseResult:
    """Calls and errors of one assistant turn, in the named style."""
    return get_style(style).parse(text, tools, policy, recover_bare)


def find_name_token(tokens: list[str], style: str = "native") -> int | None:
    """The index of the token that holds the first character of the tool's name in a written call.

    `tokens` are a turn's token texts in order; the name starts after the style's name marker
    (`"name": "` natively, `Action: ` in ReAct). None when the turn names no tool (prose, or a
    call cut off before it).
    """
    written = "".join(tokens)
    marker = get_style(style).name_marker
    if marker not in written:
        return None
    target, start = written.index(marker) + len(marker), 0
    for index, text in enumerate(tokens):
        if start <= target < start + len(text):
            return index
        start += len(text)
    return None


load_styles()

__all__ = ["STYLES", "Span", "Style", "find_name_token", "get_style", "other_style", "parse_turn", "register_style", "style_names"]
