"""`python -m engine mask`: the tokens a call's grammar allows after what the assistant has written so far, and
what the mask is doing (Qwen3's grammars under every --tool-choice; another family's under auto)."""

from __future__ import annotations

from ..core.call_formats import format_of_family
from ..errors import BadInput
from .common import add_family_flag, add_format_flag, read_tools


def add_parser(sub) -> None:
    p = sub.add_parser("mask", help="the tokens a call's grammar allows after a prefix")
    p.add_argument("--tools", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--tool-choice", default="auto")
    p.add_argument(
        "--thinking", action="store_true", help="enable_thinking=True: a <think> block may come before the call"
    )
    add_family_flag(p)
    add_format_flag(p, takes_style=False, takes_family=True)
    p.set_defaults(handler=cmd_mask)


def cmd_mask(args) -> dict:
    """{"vocab", "allowed", "sample"} (DESIGN.md), and what the mask is doing."""
    # constrain imports torch and xgrammar: only the commands that need them pay for it
    from ..constrain.masks import inspect_mask

    if args.family is not None and not format_of_family(args.family).constrained:
        from ..constrain.families import inspect_family_mask

        if args.tool_choice != "auto" or args.thinking:
            raise BadInput(
                f"--family {args.family} masks only under --tool-choice auto, without --thinking "
                "(required, a named tool and thinking are Qwen3's grammars)"
            )
        mask = inspect_family_mask(format_of_family(args.family).name, read_tools(args.tools), args.prefix)
        return {
            "vocab": mask.vocab,
            "allowed": mask.allowed,
            "sample": mask.sample,
            "constrained": mask.constrained,
            "family": mask.family,
            "opener": mask.opener,
        }
    view = inspect_mask(read_tools(args.tools), args.prefix, args.tool_choice, thinking=args.thinking)
    return {
        "vocab": view.vocab,
        "allowed": view.allowed,
        "sample": view.sample,
        "constrained": view.constrained,
        "state": view.state,
        "reason": view.reason,
        "unconstrained_reason": view.unconstrained_reason,
    }
