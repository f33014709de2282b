"""JSON a visitor or a command line hands in, read with bounds: no NaN or Infinity, no huge numbers, no deep nesting.

Python's json.loads accepts NaN and Infinity (which are not JSON, and would be written into a
prompt as such), raises ValueError past 4,300 digits and RecursionError about 1,000 levels
down, and reads a lone surrogate escape ("\\ud800") into a string that is not text (the
tokenizer and every UTF-8 writer refuse it). Every one of those becomes an `InputProblem`
with a sentence that says what to change. A file named on the command line is read the same
way, with a cap on its bytes; a device, a FIFO or a folder is refused before a byte is read
(`/dev/zero` would otherwise be read until memory runs out).
"""

from __future__ import annotations

import json
import os
import re
import stat

from ..errors import BadInput

MAX_DEPTH = 64  # lists and objects inside each other; tool schemas need a handful
MAX_NUMBER_CHARS = 100  # digits of one number (a float or an int)
MAX_FILE_BYTES = 8 * 1024 * 1024  # a tools or messages file (a 40,960-token context is about 160 KB of text)
SURROGATE = re.compile("[\ud800-\udfff]")


class InputProblem(BadInput):
    """JSON that cannot be used as it is; the message is one line."""


def refuse_constant(name: str):
    raise InputProblem(f"holds {name}, which is not JSON (write a number, or null)")


def _bounded_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise InputProblem(f"holds a number of {len(text):,} digits; at most {MAX_NUMBER_CHARS} are read")
    return int(text)


def _bounded_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise InputProblem(f"holds a number of {len(text):,} characters; at most {MAX_NUMBER_CHARS} are read")
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise InputProblem(f"holds the number {text[:20]}, too large for a float")
    return value


def check_depth(value: object, limit: int = MAX_DEPTH) -> None:
    """An InputProblem when lists and objects nest deeper than `limit` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth > limit:
                raise InputProblem(f"nests lists and objects more than {limit} deep")
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))


def json_strings(value: object):
    """Every string of a parsed JSON value, keys included, walked without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            yield item


def check_text(value: object) -> None:
    """An InputProblem when a string (a value or a key) holds a lone surrogate, which no UTF-8 text can hold."""
    for item in json_strings(value):
        if found := SURROGATE.search(item):
            raise InputProblem(
                f"holds a lone surrogate ({found.group()!r}, half of a UTF-16 pair), which is not text: write the "
                "character itself, or both halves of its \\u escape pair"
            )


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, from its st_mode: 'a folder', 'a FIFO', 'a device'..."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_text_file(path: str, max_bytes: int = MAX_FILE_BYTES) -> str:
    """A regular file's UTF-8 text, at most `max_bytes`; an InputProblem completing "the file ..." otherwise.

    Opened without blocking (a FIFO with no writer would wait forever) and checked on the open
    descriptor, so what is read is what was checked. OSError when it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputProblem(f"is {file_kind(mode)}, not a regular file: give the path of a JSON file")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise InputProblem(f"is larger than {max_bytes:,} bytes, the most that is read: give a smaller JSON file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputProblem("is not UTF-8 text") from None


def read_json_text(text: str) -> object:
    """The value of `text`, or an InputProblem whose message completes "the file ..." in one line."""
    try:
        value = json.loads(text, parse_constant=refuse_constant, parse_int=_bounded_int, parse_float=_bounded_float)
    except json.JSONDecodeError as error:
        raise InputProblem(f"is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}") from None
    except RecursionError:
        raise InputProblem(f"nests lists and objects more than {MAX_DEPTH} deep") from None
    except InputProblem:
        raise
    except ValueError as error:
        raise InputProblem(f"is not usable JSON: {str(error).splitlines()[0][:120]}") from None
    check_depth(value)
    check_text(value)
    return value
