"""The command line: `python -m engine COMMAND ...`, one JSON object on stdout.

The contract (commands, flags, JSON keys) is in DESIGN.md; classroom scripts and outside
checks rely on it, so keys are only ever added. A bad argument or input file prints a
one-line error on stderr and exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from .core.call_formats import (
    CallFormat,
    constrained_format,
    family_names,
    format_names,
    format_of_family,
    get_format,
    lesson_format_names,
    parse_turn,
    price_tools,
    render_tokens,
)
from .core.json_input import MAX_FILE_BYTES, MAX_NUMBER_CHARS, InputProblem, read_json_text, read_text_file
from .core.out_paths import check_writable_folder, own_temp_folder
from .core.prompt import Request, check_prefix, count_tools_tokens, render
from .core.tooldefs import check_tool_definitions
from .errors import BadInput, EngineError
from .harness.loop import check_messages, load_scenario, run_scenario
from .harness.tools import run_tool
from .harness.workspace import Workspace
from .model.loading import TINY, load_model
from .model.weights import locate_weights, revision_of
from .settings import BUILTIN, load_settings


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line on stderr, exit 2
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def whole_number(text: str) -> int:
    """argparse's type for a count or a seed: int's reading, with a number of thousands of digits refused in a short line
    (int reads up to 4,300 digits, and the refusal would echo them all); the command checks the range."""
    digits = text.strip().lstrip("+-")
    if len(digits) > MAX_NUMBER_CHARS and digits.isdigit():
        raise argparse.ArgumentTypeError(
            f"a number of {len(digits):,} digits; at most {MAX_NUMBER_CHARS} are read: give a whole number such as 3"
        )
    try:
        return int(text)
    except ValueError:
        # argparse's own words for a type=int flag, kept
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None


# the commands that load a model: they run in a temporary folder of their own, which takes torch's compile cache
LOADING_COMMANDS = ("generate", "eval", "prepare", "train-builtin")


def _read_json(path: str, what: str):
    """A JSON file named on the command line: a regular file, at most MAX_FILE_BYTES, read with read_json_text's bounds."""
    try:
        return read_json_text(read_text_file(path))
    except OSError as error:
        raise EngineError(f"cannot read {what} file {path}: {error.strerror or error}") from error
    except InputProblem as problem:
        raise EngineError(f"{what} file {path} {problem}") from None
    except ValueError:  # os.open's "embedded null byte"
        raise EngineError(f"cannot read {what} file {path!r}: a path cannot hold a NUL character") from None


def _read_stdin() -> str:
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


def _read_tools(path: str | None) -> list[dict]:
    if path is None:
        return []
    return check_tool_definitions(_read_json(path, "tools"))


def _read_messages(path: str | None) -> list[dict]:
    if path is None:
        return []
    return check_messages(_read_json(path, "messages"))


# without --messages, `tokens` counts the tools beside one empty user message (the template needs one)
DEFAULT_MESSAGES = [{"role": "user", "content": ""}]


def cmd_tokens(args) -> dict:
    messages = _read_messages(args.messages) if args.messages is not None else DEFAULT_MESSAGES
    if args.family is not None:
        return family_tokens(args.family, messages, _read_tools(args.tools), args.style)
    request = Request(messages, _read_tools(args.tools), args.style)
    prompt = render(request)
    return {
        "style": args.style,
        "prompt_tokens": prompt.count,
        "tools_tokens": count_tools_tokens(request),
        "spans": [{"label": s.label, "tokens": s.tokens} for s in prompt.spans],
    }


def chosen_format(family: str | None, style: str) -> CallFormat:
    """The call format a command reads: --style's, or with --family that family's own format. --style picks
    between the lesson formats, which are written in Qwen3's template, so with another family it stays at its default."""
    if family is None:
        return get_format(style)
    fmt = format_of_family(family)
    if fmt.in_lessons:
        return get_format(style)
    if style != lesson_format_names()[0]:
        families = ", ".join(f.family for f in map(get_format, lesson_format_names()))
        raise BadInput(f"--style {style} is written in Qwen3's template only; use --family {families} with it")
    return fmt


def format_flags(name: str, takes_style: bool, takes_family: bool) -> tuple[str | None, str | None] | None:
    """(--style, --family) that `--format NAME` stands for in a command that takes those flags (None: left alone), or
    None when the command cannot read that format. A family's name is --family; a lesson format's name is --style;
    another maker's format is its family."""
    fmt = get_format(name)
    if takes_family and name in family_names():
        return None, name
    if takes_style and fmt.in_lessons:
        return fmt.name, None
    if takes_family and fmt.maker_format:
        return None, fmt.family
    return None


def format_choices(takes_style: bool, takes_family: bool) -> list[str]:
    """The --format names a command with these flags can read, in the registry's order."""
    return [name for name in format_names() if format_flags(name, takes_style, takes_family) is not None]


def read_format(args) -> CallFormat:
    """The call format a command's --style and --family pick: what it reads."""
    takes_style, takes_family = "style" in vars(args), "family" in vars(args)
    if takes_style and takes_family:
        return chosen_format(args.family, args.style)
    if takes_family:
        # mask without --family holds Qwen3's native grammar
        return format_of_family(args.family) if args.family is not None else constrained_format()
    return get_format(args.style)


def settle_format(args) -> None:
    """--format NAME as the --style or --family it stands for; --style's default where none was given.

    A --style or --family given beside --format must pick the same format, or the command refuses both."""
    takes_style, takes_family = "style" in vars(args), "family" in vars(args)
    name = getattr(args, "format", None)
    given = [f"--{flag} {vars(args)[flag]}" for flag in ("style", "family") if vars(args).get(flag) is not None]
    if name is not None:
        style, family = format_flags(name, takes_style, takes_family)
        if takes_style and args.style is None:
            args.style = style
        if takes_family and args.family is None:
            args.family = family
    if takes_style and args.style is None:
        args.style = lesson_format_names()[0]
    if name is None or not given:
        return
    try:
        agrees = read_format(args) is get_format(name)
    except BadInput:  # a --style that the family's template cannot write
        agrees = False
    if not agrees:
        raise BadInput(
            f"--format {name} and {' '.join(given)} name different call formats: give --format alone, "
            f"or flags that agree with it"
        )


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


def cmd_parse(args) -> dict:
    fmt = chosen_format(args.family, args.style)
    if args.policy not in fmt.policies:
        raise BadInput(
            f"--policy {args.policy} does not apply to {fmt.label}: it is read with {' or '.join(fmt.policies)}"
        )
    result = parse_turn(_read_stdin(), _read_tools(args.tools), fmt.name, args.policy)
    return {
        "calls": [{"name": c.name, "arguments": c.arguments} for c in result.calls],
        "errors": [{"block": e.block, "error": e.error} for e in result.errors],
        "final": result.final,
    }


def cmd_run(args) -> dict:
    run = run_scenario(load_scenario(args.scenario), args.style)
    return run.ledger.as_json()


def cmd_tool(args) -> dict:
    try:
        arguments = read_json_text(args.args)
    except InputProblem as problem:
        raise EngineError(f"--args {problem}") from None
    if not isinstance(arguments, dict):
        raise EngineError('--args must be a JSON object, such as \'{"path": "notes.txt"}\'')
    outcome = run_tool(args.name, arguments, Workspace(args.workspace))
    return {"error": outcome.error} if outcome.error is not None else {"result": outcome.result}


def cmd_mask(args) -> dict:
    """{"vocab", "allowed", "sample"} (DESIGN.md), and what the mask is doing."""
    # constrain imports torch and xgrammar: only the commands that need them pay for it
    from .constrain.masks import inspect_mask

    if args.family is not None and not format_of_family(args.family).constrained:
        from .constrain.families import inspect_family_mask

        if args.tool_choice != "auto" or args.thinking:
            raise BadInput(
                f"--family {args.family} masks only under --tool-choice auto, without --thinking "
                "(required, a named tool and thinking are Qwen3's grammars)"
            )
        mask = inspect_family_mask(format_of_family(args.family).name, _read_tools(args.tools), args.prefix)
        return {
            "vocab": mask.vocab,
            "allowed": mask.allowed,
            "sample": mask.sample,
            "constrained": mask.constrained,
            "family": mask.family,
            "opener": mask.opener,
        }
    view = inspect_mask(_read_tools(args.tools), args.prefix, args.tool_choice, thinking=args.thinking)
    return {
        "vocab": view.vocab,
        "allowed": view.allowed,
        "sample": view.sample,
        "constrained": view.constrained,
        "state": view.state,
        "reason": view.reason,
        "unconstrained_reason": view.unconstrained_reason,
    }


def print_progress(done: int, total: int, desc: str) -> None:
    """A progress line on stderr for the command line (stdout carries the JSON)."""
    if total:
        sys.stderr.write(f"\r{desc}: {done / 1e6:,.1f} / {total / 1e6:,.1f} MB ({100 * done / total:.0f}%)")
        if done >= total:
            sys.stderr.write("\n")
    else:
        sys.stderr.write(f"{desc}\n")
    sys.stderr.flush()


def cmd_generate(args) -> dict:
    """One turn, token by token, as DESIGN.md's JSON."""
    from .core.generation import GenerationSettings
    from .packs.trace import check_record_path, record_trace

    # every check before torch's import (seconds) and a load that can take minutes
    if args.record:
        check_record_path(args.record)
    if args.prefix:
        check_prefix_flags(args)
    messages, tools = _read_messages(args.messages), _read_tools(args.tools)
    settings = GenerationSettings(
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=args.top_k,
        seed=args.seed,
        enable_thinking=args.thinking,
        # the command line's JSON reports the model's own view under a mask (DESIGN.md's step keys)
        model_view=True,
    )
    settings.check()
    # live imports torch: only the commands that need it pay for it
    from .model.live import build_constraint, generate_turn

    model = open_engine(args)
    request = Request(messages, tools, "native", enable_thinking=settings.enable_thinking)
    constraint = None
    # a server applies required and named tool_choice's grammar itself (sent with the request); auto stays free there
    server_grammar = args.engine_url and args.tool_choice not in (None, "auto", "none")
    if server_grammar:
        from .model.remote import grammar_problem

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


def open_engine(args):
    """The model a command runs: the server at --engine-url (its --model, if given, must be one it serves), else a local load."""
    if args.engine_url:
        from .model.remote import connect

        return connect(args.engine_url, args.model)
    if not args.model:
        raise BadInput(
            "--model is required (builtin, tiny, a hub id or a local folder), or --engine-url URL for a server"
        )
    return load_model(args.model, args.device, args.dtype, print_progress)


def cmd_eval(args) -> dict:
    """A suite's tasks, once per seed: blocks, valid, unusable by kind, runs that called, tokens (progress on stderr)."""
    from .harness.eval import EvalSettings, load_suite, run_suite

    suite = load_suite(args.suite)
    settings = EvalSettings(
        seeds=args.seeds,
        tool_choice=args.tool_choice,
        constrained=args.constrained,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        limit=args.limit,
    )
    # refuse a bad setting or an eval past the cap before a load that can take minutes
    settings.check(suite)
    from .model.live import eval_models

    model = open_engine(args)
    make_model, note = eval_models(model, settings.tool_choice, settings.constrained)

    def progress(result) -> None:
        sys.stderr.write(f"\r{args.suite} ({settings.condition}): {len(result.records)} / {result.planned} runs")
        sys.stderr.write("\n" if len(result.records) == result.planned else "")
        sys.stderr.flush()

    return run_suite(suite, settings, make_model, model.info.as_json(), on_run=progress, note=note).as_json()


def cmd_download(args) -> dict:
    """Fetch a model into the Hugging Face cache, progress on stderr."""
    name = args.model or load_settings().model
    if name == TINY:
        raise BadInput("the tiny model is built in memory from a seed; there is nothing to download")
    if name == BUILTIN:
        raise BadInput(
            "the shipped model is in the site's own folder (assets/builtin-model); there is nothing to download"
        )
    check_download_cache(name)
    folder, source = locate_weights(name, print_progress)
    files = sorted(p.name for p in Path(folder).iterdir() if p.is_file())
    size = sum((Path(folder) / f).stat().st_size for f in files)
    return {
        "model": name,
        "path": str(folder),
        "source": source,
        "revision": revision_of(folder),
        "files": files,
        "bytes": size,
    }


def check_download_cache(name: str) -> None:
    """Before a download: the Hugging Face cache it writes into can be made and written (a model already here writes
    nothing). The cache may be a link its user made, so a link there is followed."""
    from huggingface_hub import constants

    from .model.weights import find_cached_weights

    try:
        here = Path(name).expanduser().is_dir()
    except (OSError, ValueError):  # a name no folder can have: locate_weights says what is wrong with it
        return
    if here or find_cached_weights(name) is not None:
        return
    check_writable_folder(constants.HF_HUB_CACHE, "the Hugging Face cache (HF_HUB_CACHE)", follow_link=True)


def cmd_prepare(args) -> dict:
    """A lesson pack: every run the site's model panels show, recorded with one model (progress on stderr)."""
    # refuse a wrong folder before a load that can take minutes, and before torch's import (seconds)
    from .packs.out_folder import check_out_folder

    out = check_out_folder(args.out)
    # prepare imports torch: only the commands that need it pay for it
    from .packs.prepare import stderr_log, write_pack

    model = open_engine(args)
    if model.info.random_weights and not args.allow_random_weights:
        raise BadInput(
            f"{args.model} has random weights: a pack of its figures would teach nothing. "
            "Give a real model (a hub id or a folder), or pass --allow-random-weights (for tests)"
        )
    stderr_log(f"recording a lesson pack with {model.info.label()} into {out}")
    return write_pack(model, out, stderr_log)


def cmd_train_builtin(args) -> dict:
    """Train the shipped model into --out, measure it on held-out prompts, and write its provenance (progress on stderr)."""
    from .train.cli import train_builtin

    return train_builtin(args)


def cmd_openai_tokens(args) -> dict:
    from .wire.openai_tokens import estimate_openai_tokens

    return estimate_openai_tokens(_read_tools(args.tools), _read_messages(args.messages), args.model).as_json()


def add_format_flag(p: argparse.ArgumentParser, takes_style: bool, takes_family: bool) -> None:
    """--format NAME on a command that takes --style or --family (settle_format reads it)."""
    p.add_argument(
        "--format",
        choices=format_choices(takes_style, takes_family),
        default=None,
        metavar="NAME",
        help="the call format by its registry name ("
        + ", ".join(format_choices(takes_style, takes_family))
        + "): the same as the --style or --family it stands for",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m engine", description="The tool-calling explainer's engine.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("tokens", help="count a prompt's tokens, by span")
    p.add_argument("--tools", required=True)
    p.add_argument("--messages")
    p.add_argument("--style", choices=lesson_format_names(), default=None)
    p.add_argument(
        "--family",
        choices=family_names(),
        default=None,
        help="the model family whose tokenizer and format to use (default qwen3)",
    )
    add_format_flag(p, takes_style=True, takes_family=True)
    p.set_defaults(handler=cmd_tokens)

    p = sub.add_parser("parse", help="parse one assistant turn read from stdin")
    p.add_argument("--tools", required=True)
    p.add_argument("--style", choices=lesson_format_names(), default=None)
    p.add_argument("--policy", choices=["per-block", "vllm", "server"], default="per-block")
    p.add_argument(
        "--family",
        choices=family_names(),
        default=None,
        help="the model family whose tokenizer and format to use (default qwen3)",
    )
    add_format_flag(p, takes_style=True, takes_family=True)
    p.set_defaults(handler=cmd_parse)

    p = sub.add_parser("mask", help="the tokens a call's grammar allows after a prefix")
    p.add_argument("--tools", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--tool-choice", default="auto")
    p.add_argument(
        "--thinking", action="store_true", help="enable_thinking=True: a <think> block may come before the call"
    )
    p.add_argument(
        "--family",
        choices=family_names(),
        default=None,
        help="the model family whose tokenizer and format to use (default qwen3)",
    )
    add_format_flag(p, takes_style=False, takes_family=True)
    p.set_defaults(handler=cmd_mask)

    p = sub.add_parser("generate", help="generate one turn, token by token, with top-k probabilities")
    p.add_argument(
        "--model",
        default=None,
        help="builtin (the shipped model), tiny, a hub id or a local folder (with --engine-url: the server's model)",
    )
    p.add_argument(
        "--engine-url",
        default=None,
        metavar="URL",
        help="an OpenAI-compatible server (vLLM, SGLang, llama.cpp) instead of a local model, e.g. http://gpu-box:8000/v1",
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
        "--prefix",
        default="",
        metavar="TEXT",
        help="the assistant's turn starts with TEXT and the model continues after it (text: the whole turn)",
    )
    p.add_argument("--thinking", action="store_true", help="enable_thinking=True")
    p.add_argument("--device", default=None, help="auto (default), cpu, cuda or mps")
    p.add_argument(
        "--dtype", default=None, help="auto (default: bfloat16 on a GPU, float32 on a CPU), float32, bfloat16, float16"
    )
    p.add_argument(
        "--record",
        default=None,
        metavar="PATH",
        help="also write the run to a JSON trace: every step, the model, the settings, the date",
    )
    p.set_defaults(handler=cmd_generate)

    p = sub.add_parser(
        "eval", help="run a suite of tasks and count the calls: valid, unusable by kind, runs that called"
    )
    p.add_argument(
        "--model",
        default=None,
        help="builtin (the shipped model), tiny, a hub id or a local folder (with --engine-url: the server's model)",
    )
    p.add_argument(
        "--engine-url", default=None, metavar="URL", help="an OpenAI-compatible server instead of a local model"
    )
    p.add_argument("--suite", required=True, help="a suite in lessons/suites: strawberry, harness, twelve-tools")
    p.add_argument("--seeds", type=whole_number, default=3, help="runs per task (seeds 0..N-1; default 3)")
    p.add_argument(
        "--tool-choice",
        choices=["auto", "required"],
        default="auto",
        help="required: a grammar forces a call on each run's first turn (later turns: auto with the grammar)",
    )
    p.add_argument(
        "--constrained",
        action="store_true",
        help="auto with the grammar: free until <tool_call>, then only a well-formed call",
    )
    p.add_argument("--max-new-tokens", type=whole_number, default=None, help="new tokens a turn (default: the suite's)")
    p.add_argument(
        "--temperature",
        type=float,
        default=0.7,
        help="sampling temperature (default 0.7; 0 = greedy, every seed alike)",
    )
    p.add_argument("--limit", type=whole_number, default=None, help="run only the suite's first N tasks")
    p.add_argument("--device", default=None, help="auto (default), cpu, cuda or mps")
    p.add_argument(
        "--dtype", default=None, help="auto (default: bfloat16 on a GPU, float32 on a CPU), float32, bfloat16, float16"
    )
    p.set_defaults(handler=cmd_eval)

    p = sub.add_parser("download", help="fetch a model into the local cache, with progress (prepare a classroom)")
    p.add_argument("--model", default=None, help="hub id (default: QWEN_MODEL or Qwen/Qwen3-1.7B)")
    p.set_defaults(handler=cmd_download)

    p = sub.add_parser(
        "prepare", help="record a lesson pack: every run a model panel shows, to replay without the model"
    )
    p.add_argument(
        "--model",
        default=None,
        help="builtin (the shipped model), tiny, a hub id or a local folder (with --engine-url: the server's model)",
    )
    p.add_argument(
        "--engine-url",
        default=None,
        metavar="URL",
        help="record from an OpenAI-compatible server (http://host:8000/v1); the pack is labelled with its model",
    )
    p.add_argument("--out", required=True, help="the pack's folder (created; an interrupted pack there is resumed)")
    p.add_argument("--allow-random-weights", action="store_true", help="record a random-weights model (tests only)")
    p.add_argument("--device", default=None, help="auto (default), cpu, cuda or mps")
    p.add_argument(
        "--dtype", default=None, help="auto (default: bfloat16 on a GPU, float32 on a CPU), float32, bfloat16, float16"
    )
    p.set_defaults(handler=cmd_prepare)

    p = sub.add_parser("run", help="a scripted harness run and its token ledger")
    p.add_argument("--scenario", required=True)
    p.add_argument("--style", choices=lesson_format_names(), default=None)
    add_format_flag(p, takes_style=True, takes_family=False)
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser(
        "openai-tokens", help="estimate the same tools and messages on an OpenAI model (the cookbook's method)"
    )
    p.add_argument("--tools", required=True)
    p.add_argument("--messages", required=True)
    p.add_argument("--model", choices=["gpt-4o", "gpt-4", "gpt-4o-mini", "gpt-3.5-turbo"], default="gpt-4o")
    p.set_defaults(handler=cmd_openai_tokens)

    p = sub.add_parser(
        "train-builtin",
        help="train the shipped model (hours on a 2-core CPU, in parts: --checkpoint-dir, --resume), measure it, "
        "write its provenance",
    )
    p.add_argument(
        "--out",
        default=None,
        help="the model's folder (assets/builtin-model is the one the site ships); "
        "optional while a run trains in parts into --checkpoint-dir",
    )
    p.add_argument("--steps", type=int, default=None, help="optimizer steps in the whole run, its decay included")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default 2; the run is deterministic for a given count, and keeps it when resumed)",
    )
    p.add_argument("--no-measure", action="store_true", help="skip the held-out measurement and the provenance")
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=0,
        help="every so many steps, save a loadable copy beside --out (OUT-step-N), to measure a long run part-way",
    )
    p.add_argument(
        "--checkpoint-dir",
        default=None,
        help="save all the run needs to continue (weights, optimizer, random states, data position) into this "
        "folder every --save-every steps and when stopped (Ctrl-C, SIGTERM, --minutes, --stop-at)",
    )
    p.add_argument("--save-every", type=int, default=None, help="steps between checkpoints (default 50)")
    p.add_argument("--resume", default=None, help="continue the run saved in this checkpoint folder, bit for bit")
    p.add_argument(
        "--finish",
        action="store_true",
        help="with --resume: finish a copy of the saved run with its short final decay into --out and measure it; "
        "the checkpoint is left as it was, so the run can go on",
    )
    p.add_argument(
        "--init-from",
        default=None,
        help="start a new run from a saved model's weights (e.g. assets/builtin-model), a fresh optimizer",
    )
    p.add_argument("--minutes", type=float, default=None, help="stop cleanly after this many minutes (saved)")
    p.add_argument("--stop-at", type=int, default=None, help="stop cleanly at this step (saved)")
    p.add_argument("--decay-steps", type=int, default=None, help="the final decay's length in steps (default 200)")
    p.add_argument(
        "--warmup", type=int, default=None, help="warm-up steps (default 150, or a tenth of a shorter run's --steps)"
    )
    p.add_argument(
        "--lr",
        type=float,
        default=None,
        help="the flat learning rate (default 0.003; lower for a warm start from weights that decayed)",
    )
    p.add_argument(
        "--rotate-places",
        action="store_true",
        help="turn each later piece of a spelled word row by a fixed rotation of its own (engine/train/spelled.py)",
    )
    p.add_argument(
        "--composed-share",
        type=float,
        default=None,
        help="share of count questions phrased from parts rather than the fixed phrasings (default 0.5)",
    )
    p.add_argument(
        "--autocast",
        choices=["auto", "bf16", "off"],
        default=None,
        help="bf16 autocast: auto (default) where the CPU runs bf16 natively (avx512_bf16, AMX), else fp32",
    )
    p.add_argument("--kv-heads", type=int, default=None, help="key/value heads (default: the shipped model's 2)")
    p.add_argument("--head-dim", type=int, default=None, help="each head's width (default: the shipped model's 32)")
    p.set_defaults(handler=cmd_train_builtin)

    p = sub.add_parser("tool", help="run one tool in a workspace folder")
    p.add_argument("name")
    p.add_argument("--args", required=True)
    p.add_argument("--workspace", required=True)
    p.set_defaults(handler=cmd_tool)
    return parser


def _one_line(text: str, limit: int = 4000) -> str:
    return " ".join(text.split())[:limit]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settle_format(args)
        # a command that loads a model leaves TMPDIR as it found it: its temporary files go into its own folder
        with own_temp_folder() if args.command in LOADING_COMMANDS else contextlib.nullcontext():
            result = args.handler(args)
    except EngineError as error:
        print(f"error: {_one_line(str(error))}", file=sys.stderr)
        return 2
    except OSError as error:  # a path the checks above let through (a folder that cannot be read, say)
        where = f" ({_one_line(str(error.filename), 300)})" if error.filename else ""
        print(f"error: {args.command} could not use a file{where}: {error.strerror or error}", file=sys.stderr)
        return 2
    except (ValueError, RecursionError, TypeError, KeyError, IndexError, OverflowError) as error:
        # an input the checks above let through (a model folder's template, say): still one line, exit 2
        print(
            f"error: {args.command} could not use its input: {type(error).__name__}: {_one_line(str(error), 300)}",
            file=sys.stderr,
        )
        return 2
    except Exception as error:
        if type(error).__module__.startswith("jinja2"):  # a model folder's chat template failed
            print(f"error: the chat template failed: {_one_line(str(error), 300)}", file=sys.stderr)
            return 2
        raise
    try:
        text = json.dumps(result, ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN or infinity, which JSON has no words for: never print "p": NaN
        print(
            f"error: {args.command}'s answer holds NaN or infinity (a model or server whose numbers broke): "
            "check the weights, or the server's log-probabilities",
            file=sys.stderr,
        )
        return 2
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:  # a lone surrogate escape ("\\ud800") in the input, copied into the answer
        print(
            f"error: {args.command}'s input holds a lone surrogate ({error.object[error.start]!r}, half of a UTF-16 "
            "pair), which is not text: write the character itself, or both halves of its \\u escape pair",
            file=sys.stderr,
        )
        return 2
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
