"""`python -m engine tokens`: a prompt's tokens, by span, and what its tools cost (DESIGN.md's keys); with
--family, in that family's own renderer, the tools' cost split as the calculator splits it."""

from __future__ import annotations

from ..core.call_formats import lesson_format_names, price_tools, render_tokens
from ..core.prompt import Request, count_tools_tokens, render
from .common import add_family_flag, add_format_flag, chosen_format, read_messages, read_tools

# without --messages, `tokens` counts the tools beside one empty user message (the template needs one)
DEFAULT_MESSAGES = [{"role": "user", "content": ""}]


def add_parser(sub) -> None:
    p = sub.add_parser("tokens", help="count a prompt's tokens, by span")
    p.add_argument("--tools", required=True)
    p.add_argument("--messages")
    p.add_argument("--style", choices=lesson_format_names(), default=None)
    add_family_flag(p)
    add_format_flag(p, takes_style=True, takes_family=True)
    p.set_defaults(handler=cmd_tokens)


def cmd_tokens(args) -> dict:
    messages = read_messages(args.messages) if args.messages is not None else DEFAULT_MESSAGES
    if args.family is not None:
        return family_tokens(args.family, messages, read_tools(args.tools), args.style)
    request = Request(messages, read_tools(args.tools), args.style)
    prompt = render(request)
    return {
        "style": args.style,
        "prompt_tokens": prompt.count,
        "tools_tokens": count_tools_tokens(request),
        "spans": [{"label": s.label, "tokens": s.tokens} for s in prompt.spans],
    }


def family_tokens(family: str, messages: list[dict], tools: list[dict], style: str) -> dict:
    """`tokens --family F`: today's keys, in that family's own renderer, plus the family and the tools' split."""
    fmt = chosen_format(family, style)
    if fmt.in_lessons:
        prompt = render(Request(messages, tools, fmt.name))
        spans = [{"label": s.label, "tokens": s.tokens} for s in prompt.spans]
        count = prompt.count
    else:
        rendering = render_tokens(fmt.name, messages, tools)
        spans = [{"label": s.label, "tokens": s.tokens} for s in rendering.spans]
        count = rendering.count
    price = price_tools(fmt.name, messages, tools)
    return {
        "style": style,
        "prompt_tokens": count,
        "tools_tokens": price.total,
        "spans": spans,
        "family": family,
        "definitions_tokens": price.definitions,
        "instructions_tokens": price.instructions,
    }
