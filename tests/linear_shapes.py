"""Adversarial turns for a call format, made from its own markers: what tests/test_parse_linear.py times.

A format's markers are the texts it exposes (its opener, its triggers, the tags around a call) and
the pieces its own `write_call` puts between a call's name, argument names and values, each piece
whole, cut at its spaces, and each tag in it on its own. A shape is a run of one marker (alone, and before a real call), a run of
an opening character or a separator, JSON nested a level per few characters, calls one after
another, or one call with very many arguments (whole, and cut off before its end). A new format gets
every shape from its own markers, with no edit here.
"""

from __future__ import annotations

import re

NAME = "count_letter"
ARGUMENTS = {"word": "strawberry", "letter": "Q"}
OPENING = ("{", "[", "<")
SEPARATORS = (";", ",", " ", "\n", "; ")
NESTING = ('{"a":', "[1,", '[{"a":')
TAG = re.compile(r"<[^<>]*>|\[[A-Z_]+\]")  # a tag: <|call|>, <｜tool▁sep｜>, [TOOL_CALLS]


def _tags(fmt) -> list[str]:
    """The tags the format exposes: its opener, its triggers, and the begin and end of each call tag."""
    found = [fmt.opener.text or "", fmt.name_prefix, fmt.name_marker, *fmt.triggers()]
    try:
        for begin, end in fmt.call_tags(NAME):
            found += [begin, end]
    except NotImplementedError:  # a format whose grammar is not a tag around JSON (ReAct)
        pass
    return found


def _written_pieces(fmt) -> list[str]:
    """The pieces of a written call between its name, argument names and values: the format's own words."""
    content = sorted([NAME, *ARGUMENTS, *ARGUMENTS.values()], key=len, reverse=True)
    return re.split("|".join(map(re.escape, content)), fmt.write_call(NAME, ARGUMENTS))


def markers(fmt) -> list[str]:
    """Every marker of the format, whole and cut at its spaces, each once, in a fixed order."""
    whole = [*_tags(fmt), *_written_pieces(fmt)]
    atoms = [atom for piece in whole for atom in re.split(r"\s+", piece)]
    # a tag on its own, where the format writes several side by side (<|constrain|>json<|message|>)
    atoms += [tag for piece in whole for tag in TAG.findall(piece)]
    return list(dict.fromkeys(m for m in [*whole, *atoms] if m.strip()))


def _run(unit: str, size: int) -> str:
    """`unit` repeated to `size` characters."""
    return (unit * (size // len(unit) + 1))[:size]


def many_arguments(fmt, size: int) -> str:
    """One call whose arguments, written as the format writes them, fill about `size` characters."""
    one = len(fmt.write_call(NAME, {"p0": "v"})) - len(fmt.write_call(NAME, {}))
    count = max(1, size // max(one, 1))
    return fmt.write_call(NAME, {f"p{i}": "v" for i in range(count)})


def shapes(fmt, size: int) -> dict[str, str]:
    """label -> a turn of about `size` characters, for every adversarial shape of the format."""
    call = fmt.write_call(NAME, ARGUMENTS)
    found: dict[str, str] = {}
    for marker in markers(fmt):
        found[f"run of {marker!r}"] = _run(marker, size)
        found[f"run of {marker!r}, then a call"] = _run(marker, size) + call
    for char in OPENING:
        found[f"run of {char!r}"] = _run(char, size)
        found[f"run of {char!r}, then a call"] = _run(char, size) + call
    for separator in SEPARATORS:
        found[f"run of {separator!r}"] = _run(separator, size)
        found[f"a call, then a run of {separator!r}"] = call + _run(separator, size)
        found[f"calls separated by {separator!r}"] = _run(call + separator, size)
    for unit in NESTING:
        found[f"nesting {unit!r}"] = _run(unit, size)
    found["calls one after another"] = _run(call, size)
    whole = many_arguments(fmt, size)
    found["one call with very many arguments"] = whole
    found["one call with very many arguments, cut off"] = whole[: len(whole) * 9 // 10]
    return found
