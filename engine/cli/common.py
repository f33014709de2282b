"""What the commands share: reading the files and numbers they are given, and which call format --style,
--family and --format pick.

A file named on the command line is read with core.json_input's bounds; a number with thousands of digits is
refused in one short line; `--format NAME` settles into the --style or --family it stands for before a
handler runs, so each handler reads those two flags only.
"""

from __future__ import annotations

import argparse
import sys

from ..core.call_formats import (
    CallFormat,
    constrained_format,
    family_names,
    format_names,
    format_of_family,
    get_format,
    lesson_format_names,
)
from ..core.json_input import MAX_NUMBER_CHARS, InputProblem, read_json_text, read_text_file
from ..core.tooldefs import check_tool_definitions
from ..errors import BadInput, EngineError
from ..harness.loop import check_messages


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


def read_json(path: str, what: str):
    """A JSON file named on the command line: a regular file, at most MAX_FILE_BYTES, read with read_json_text's bounds."""
    try:
        return read_json_text(read_text_file(path))
    except OSError as error:
        raise EngineError(f"cannot read {what} file {path}: {error.strerror or error}") from error
    except InputProblem as problem:
        raise EngineError(f"{what} file {path} {problem}") from None
    except ValueError:  # os.open's "embedded null byte"
        raise EngineError(f"cannot read {what} file {path!r}: a path cannot hold a NUL character") from None


def read_tools(path: str | None) -> list[dict]:
    if path is None:
        return []
    return check_tool_definitions(read_json(path, "tools"))


def read_messages(path: str | None) -> list[dict]:
    if path is None:
        return []
    return check_messages(read_json(path, "messages"))


def print_progress(done: int, total: int, desc: str) -> None:
    """A progress line on stderr for the command line (stdout carries the JSON)."""
    if total:
        sys.stderr.write(f"\r{desc}: {done / 1e6:,.1f} / {total / 1e6:,.1f} MB ({100 * done / total:.0f}%)")
        if done >= total:
            sys.stderr.write("\n")
    else:
        sys.stderr.write(f"{desc}\n")
    sys.stderr.flush()


# -- the call format: --style, --family and --format ----------------------------------------------------------
def add_family_flag(p: argparse.ArgumentParser) -> None:
    """--family, on the commands that read another model family's format."""
    p.add_argument(
        "--family",
        choices=family_names(),
        default=None,
        help="the model family whose tokenizer and format to use (default qwen3)",
    )


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
