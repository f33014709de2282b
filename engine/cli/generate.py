"""`python -m engine generate`: one turn, token by token, with each step's top-k probabilities and, under a
grammar, how many tokens it allowed; from a local model or a server, optionally begun with --prefix or recorded."""

from __future__ import annotations

from ..core.prompt import Request, check_prefix
from ..errors import BadInput
from . import models
from .common import read_messages, read_tools, whole_number


def add_parser(sub) -> None:
    p = sub.add_parser("generate", help="generate one turn, token by token, with top-k probabilities")
    models.add_model_flags(
        p,
        "an OpenAI-compatible server (vLLM, SGLang, llama.cpp) instead of a local model, e.g. http://gpu-box:8000/v1",
    )
    p.add_argument("--messages", required=True)
    p.add_argument("--tools")
    p.add_argument("--tool-choice", default=None)
    p.add_argument("--top-k", type=whole_number, default=5)
    p.add_argument("--max-new-tokens", type=whole_number, default=128)
    p.add_argument("--seed", type=whole_number, default=0)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument(
        "--top-p",
        type=float,
        default=1.0,
        help="sampling only: draw from the smallest set of most likely tokens whose probability reaches P (0 < P <= 1)",
    )
    p.add_argument(
        "--sample-top-k",
        type=whole_number,
        default=0,
        metavar="K",
        help="sampling only: draw from the K most likely tokens, renormalised, before --top-p (0: no cut; "
        "--top-k is how many candidates each step reports)",
    )
    p.add_argument(
        "--prefix",
        default="",
        metavar="TEXT",
        help="the assistant's turn starts with TEXT and the model continues after it (text: the whole turn)",
    )
    p.add_argument("--thinking", action="store_true", help="enable_thinking=True")
    models.add_device_flags(p)
    p.add_argument(
        "--record",
        default=None,
        metavar="PATH",
        help="also write the run to a JSON trace: every step, the model, the settings, the date",
    )
    p.set_defaults(handler=cmd_generate)


def cmd_generate(args) -> dict:
    """One turn, token by token, as DESIGN.md's JSON."""
    from ..core.generation import GenerationSettings
    from ..packs.trace import check_record_path, record_trace

    # every check before torch's import (seconds) and a load that can take minutes
    if args.record:
        check_record_path(args.record)
    if args.prefix:
        check_prefix_flags(args)
    messages, tools = read_messages(args.messages), read_tools(args.tools)
    settings = GenerationSettings(
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=args.top_k,
        sample_top_k=args.sample_top_k,
        seed=args.seed,
        enable_thinking=args.thinking,
        # the command line's JSON reports the model's own view under a mask (DESIGN.md's step keys)
        model_view=True,
    )
    settings.check()
    # live imports torch: only the commands that need it pay for it
    from ..model.live import build_constraint, generate_turn

    model = models.open_engine(args)
    request = Request(messages, tools, "native", enable_thinking=settings.enable_thinking)
    constraint = None
    # a server applies required and named tool_choice's grammar itself (sent with the request); auto stays free there
    server_grammar = args.engine_url and args.tool_choice not in (None, "auto", "none")
    if server_grammar:
        from ..model.remote import grammar_problem

        problem = grammar_problem(model, args.tool_choice)
        if problem:
            raise BadInput(problem)
    if not args.engine_url or server_grammar:
        constraint = build_constraint(model, tools, args.tool_choice, thinking=settings.enable_thinking)
    generation = generate_turn(model, request, settings, constraint, prefix=args.prefix)
    result = generation.as_json()
    if "prefix" in generation.extra:  # {"text", "ids"}: the turn's opening words, before the steps
        result["prefix"] = generation.extra["prefix"]
    if "grammar" in generation.extra:  # where the grammar ran: {"ran_on": "server", "server", "dialect", "field", ...}
        result["grammar"] = generation.extra["grammar"]
    if args.record:
        result["trace"] = str(record_trace(args.record, generation, request, tool_choice=args.tool_choice))
    return result


def check_prefix_flags(args) -> None:
    """generate --prefix: a bounded text with no turn marker, and not with --record (a trace replays a turn the model
    wrote whole)."""
    if args.record:
        raise BadInput(
            "--record keeps a turn the model wrote from its first token; a --prefix turn begins with words it did "
            "not write: drop one of them"
        )
    check_prefix(args.prefix)
