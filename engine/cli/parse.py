"""`python -m engine parse`: one assistant turn read from stdin, parsed into calls and one error per malformed
block, in the call format --style, --family or --format picks, under a --policy (strict per block, or a server's)."""

from __future__ import annotations

import sys

from ..core.call_formats import lesson_format_names, parse_turn
from ..core.json_input import MAX_FILE_BYTES
from ..errors import BadInput
from .common import add_family_flag, add_format_flag, chosen_format, read_tools


def add_parser(sub) -> None:
    p = sub.add_parser("parse", help="parse one assistant turn read from stdin")
    p.add_argument("--tools", required=True)
    p.add_argument("--style", choices=lesson_format_names(), default=None)
    p.add_argument("--policy", choices=["per-block", "vllm", "server"], default="per-block")
    add_family_flag(p)
    add_format_flag(p, takes_style=True, takes_family=True)
    p.set_defaults(handler=cmd_parse)


def cmd_parse(args) -> dict:
    fmt = chosen_format(args.family, args.style)
    if args.policy not in fmt.policies:
        raise BadInput(
            f"--policy {args.policy} does not apply to {fmt.label}: it is read with {' or '.join(fmt.policies)}"
        )
    result = parse_turn(read_stdin(), read_tools(args.tools), fmt.name, args.policy)
    return {
        "calls": [{"name": c.name, "arguments": c.arguments} for c in result.calls],
        "errors": [{"block": e.block, "error": e.error} for e in result.errors],
        "final": result.final,
    }


def read_stdin() -> str:
    """The turn text `parse` reads: UTF-8, at most MAX_FILE_BYTES."""
    source = getattr(sys.stdin, "buffer", None)
    if source is None:  # a text stream (a test's StringIO)
        text = sys.stdin.read(MAX_FILE_BYTES + 1)
        size = len(text)
    else:
        data = source.read(MAX_FILE_BYTES + 1)
        size = len(data)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise BadInput(f"stdin is not UTF-8 text (byte {error.start:,} is not): give the turn as UTF-8") from None
    if size > MAX_FILE_BYTES:
        raise BadInput(f"stdin holds more than {MAX_FILE_BYTES:,} bytes, the most `parse` reads: give one turn's text")
    return text
