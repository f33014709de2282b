"""The command line: `python -m engine COMMAND ...`, one JSON object on stdout.

The contract (commands, flags, JSON keys) is in DESIGN.md; classroom scripts and outside
checks rely on it, so keys are only ever added. A bad argument or input file prints a
one-line error on stderr and exits 2.

One module per command holds its flags (`add_parser`) and its handler (`cmd_...`); this file
puts them into one parser, in COMMANDS' order (the order `--help` lists them), and runs one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

from ..core.out_paths import own_temp_folder
from ..errors import EngineError
from . import (
    download,
    evaluate,
    generate,
    mask,
    openai_tokens,
    parse,
    prepare,
    run,
    tokens,
    tool,
    train_builtin,
)
from .common import settle_format
from .models import LOADING_COMMANDS

# every command's module, in the order --help lists them
COMMANDS = (tokens, parse, mask, generate, evaluate, download, prepare, run, openai_tokens, train_builtin, tool)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line on stderr, exit 2
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m engine", description="The tool-calling explainer's engine.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        command.add_parser(sub)
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
    return write_answer(args.command, result)


def write_answer(command: str, result: dict) -> int:
    """The handler's answer as one line of JSON on stdout (0), or, where it cannot be written as text, why (2)."""
    try:
        text = json.dumps(result, ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN or infinity, which JSON has no words for: never print "p": NaN
        print(
            f"error: {command}'s answer holds NaN or infinity (a model or server whose numbers broke): "
            "check the weights, or the server's log-probabilities",
            file=sys.stderr,
        )
        return 2
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:  # a lone surrogate escape ("\\ud800") in the input, copied into the answer
        print(
            f"error: {command}'s input holds a lone surrogate ({error.object[error.start]!r}, half of a UTF-16 "
            "pair), which is not text: write the character itself, or both halves of its \\u escape pair",
            file=sys.stderr,
        )
        return 2
    sys.stdout.write(text + "\n")
    return 0
