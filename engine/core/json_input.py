"""JSON a visitor or a command line hands in, read with bounds: no NaN or Infinity, no huge numbers, no deep nesting.

Python's json.loads accepts NaN and Infinity (which are not JSON, and would be written into a
prompt as such), raises ValueError past 4,300 digits and RecursionError about 1,000 levels
down. Every one of those becomes an `InputProblem` with a sentence that says what to change.
"""

from __future__ import annotations

import json

from ..errors import BadInput

MAX_DEPTH = 64  # lists and objects inside each other; tool schemas need a handful
MAX_NUMBER_CHARS = 100  # digits of one number (a float or an int)


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
    return value
