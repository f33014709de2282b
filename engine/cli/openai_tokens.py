"""`python -m engine openai-tokens`: the same tools and messages estimated on an OpenAI model, by the OpenAI
cookbook's method (engine/wire/openai_tokens.py)."""

from __future__ import annotations

from .common import read_messages, read_tools


def add_parser(sub) -> None:
    p = sub.add_parser(
        "openai-tokens", help="estimate the same tools and messages on an OpenAI model (the cookbook's method)"
    )
    p.add_argument("--tools", required=True)
    p.add_argument("--messages", required=True)
    p.add_argument("--model", choices=["gpt-4o", "gpt-4", "gpt-4o-mini", "gpt-3.5-turbo"], default="gpt-4o")
    p.set_defaults(handler=cmd_openai_tokens)


def cmd_openai_tokens(args) -> dict:
    from ..wire.openai_tokens import estimate_openai_tokens

    return estimate_openai_tokens(read_tools(args.tools), read_messages(args.messages), args.model).as_json()
