"""The checks every family's parser runs on one call, with the same order and wording as Qwen's.

A family finds its calls its own way (a regex over its markers, as the vLLM parser for that
format does); each call it finds is then checked here, as `engine.core.parse` checks a Qwen
`<tool_call>` block: closed, valid strict JSON, the call's shape, a supplied tool, then the
arguments (object, required, no extra, types; jsonschema). The error strings that name a
format's own markers are the family's; the argument errors are Qwen's, word for word.

A call holds at most MAX_ARGUMENTS arguments, as a turn holds at most MAX_CALLS calls and a
request at most MAX_TOOLS tools: a tool's definition lists at most that many properties
(engine.core.tooldefs), so a call of more is refused with one error, its arguments check, and
a reading that counts them (Qwen3-Coder's parameters) stops there, so a call of 200,000
parameters costs what a call of a hundred does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..parse import (
    MAX_CALLS,
    NATIVE_CHECKS,
    Block,
    BlockError,
    Call,
    Check,
    ParseResult,
    check_arguments,
    load_strict_json,
    pad_checks,
    too_many_calls,
    tool_map,
    unknown_tool,
)
from ..tooldefs import MAX_PROPERTIES

__all__ = [
    "MAX_ARGUMENTS",
    "MAX_CALLS",
    "as_text",
    "bound_arguments",
    "check_named_call",
    "check_object_call",
    "finish_call",
    "known_tools",
    "result_of",
    "too_many_arguments",
    "too_many_calls",
]

MAX_ARGUMENTS = MAX_PROPERTIES  # arguments one call may hold: a tool lists at most this many properties


def too_many_arguments(count: int) -> str:
    """The error of a call over MAX_ARGUMENTS: how many it wrote, the bound, and what to do."""
    return (
        f"error: this call has {count:,} arguments; at most {MAX_ARGUMENTS} are read in one call, "
        f"as a tool lists at most {MAX_PROPERTIES} parameters: pass only the ones its schema lists"
    )


def known_tools(tools: list[dict]) -> dict[str, dict]:
    """name -> parameters schema of the supplied tools."""
    return tool_map(tools)


def _json_check(body: str, checks: list[Check], empty: str, not_json: str) -> tuple[object, str | None]:
    if not body.strip():
        checks.append(Check("json", False, empty))
        return None, empty
    value, error = load_strict_json(body.strip())
    if error is not None:
        # a raw newline or a too-large number keeps its own message; any other failure is the family's
        error = error if error != "error: the text inside <tool_call></tool_call> is not valid JSON" else not_json
        checks.append(Check("json", False, error))
        return None, error
    checks.append(Check("json", True))
    return value, None


def finish_call(
    index: int,
    body: str,
    start: int,
    end: int,
    checks: list[Check],
    name: str,
    arguments: object,
    known: dict[str, dict],
    count: int | None = None,
) -> Block:
    """A call found and read (its `checks` so far), checked for a supplied tool, then its arguments.

    `count` is how many arguments the call wrote, where its reading stopped before the end (the
    number of keys of `arguments` otherwise)."""
    if name not in known:
        error = unknown_tool(name, list(known))
        checks.append(Check("name", False, error))
        return Block(index, body, start, end, pad_checks(checks, NATIVE_CHECKS), None, error)
    checks.append(Check("name", True))
    count = count if count is not None else len(arguments) if isinstance(arguments, dict) else 0
    if count > MAX_ARGUMENTS:
        error = too_many_arguments(count)
        checks.append(Check("arguments", False, error))
        return Block(index, body, start, end, pad_checks(checks, NATIVE_CHECKS), None, error)
    more, error = check_arguments(name, arguments, known[name])
    checks.extend(more)
    call = None if error else Call(name, arguments, index)
    return Block(index, body, start, end, pad_checks(checks, NATIVE_CHECKS), call, error)


def check_object_call(
    index: int,
    value: object,
    body: str,
    start: int,
    end: int,
    known: dict[str, dict],
    arguments_key: str,
    shape_error: str,
    optional: tuple[str, ...] = (),
) -> Block:
    """A call written as one JSON object {"name", arguments_key} (and any `optional` keys), already parsed."""
    checks = [Check("closed", True), Check("json", True)]
    keys = set(value) if isinstance(value, dict) else set()
    if not isinstance(value, dict) or not {"name", arguments_key} <= keys or keys - {"name", arguments_key, *optional}:
        checks.append(Check("shape", False, shape_error))
        return Block(index, body, start, end, pad_checks(checks, NATIVE_CHECKS), None, shape_error)
    checks.append(Check("shape", True))
    name = value["name"]
    if not isinstance(name, str):
        error = unknown_tool(name, list(known))
        checks.append(Check("name", False, error))
        return Block(index, body, start, end, pad_checks(checks, NATIVE_CHECKS), None, error)
    return finish_call(index, body, start, end, checks, name, value[arguments_key], known)


def check_named_call(
    index: int,
    name: str,
    body: str,
    start: int,
    end: int,
    known: dict[str, dict],
    closed: bool,
    not_closed: str,
    empty: str,
    not_json: str,
) -> Block:
    """A call whose name is written outside the JSON (gpt-oss's recipient, DeepSeek's name before <｜tool▁sep｜>)."""
    if not closed:
        return Block(
            index, body, start, end, pad_checks([Check("closed", False, not_closed)], NATIVE_CHECKS), None, not_closed
        )
    checks = [Check("closed", True)]
    value, error = _json_check(body, checks, empty, not_json)
    if error:
        return Block(index, body, start, end, pad_checks(checks, NATIVE_CHECKS), None, error)
    checks.append(Check("shape", True))
    return finish_call(index, body, start, end, checks, name.strip(), value, known)


def parse_json_text(body: str, checks: list[Check], empty: str, not_json: str) -> tuple[object, str | None]:
    """Strict JSON of a call's text, its verdict appended to `checks`."""
    return _json_check(body, checks, empty, not_json)


def result_of(family: str, blocks: list[Block], answer: str | None = None, policy: str = "per-block") -> ParseResult:
    """The turn's result: a final answer when no call was found, else the good calls and every block's error."""
    if not blocks:
        return ParseResult(family, policy, [], [], True, [], answer=(answer or "").strip())
    errors = [BlockError(b.index, b.error) for b in blocks if b.error]
    calls = [b.call for b in blocks if b.call is not None]
    return ParseResult(family, policy, calls, errors, False, blocks)


def bound_arguments(result: ParseResult, written: Callable[[Block], tuple[str, dict] | None]) -> ParseResult:
    """The result with each block whose call wrote more than MAX_ARGUMENTS arguments failing its arguments check
    (for the readings engine.core.parse makes: Qwen3's blocks and ReAct's Action); `written` gives a block's
    name and arguments, as the format's `written_call` does."""
    over = {}
    for block in result.blocks:
        if any(c.name == "arguments" and c.passed for c in block.checks):
            call = (block.call.name, block.call.arguments) if block.call is not None else written(block)
            if call is not None and len(call[1]) > MAX_ARGUMENTS:
                over[block.index] = len(call[1])
    if not over:
        return result
    blocks = [_over_bound(b, over[b.index]) if b.index in over else b for b in result.blocks]
    calls = [c for c in result.calls if c.block not in over]
    errors = [BlockError(b.index, b.error) for b in blocks if b.error]
    return replace(result, calls=calls, errors=errors, blocks=blocks)


def _over_bound(block: Block, count: int) -> Block:
    """A block whose call holds too many arguments: its arguments check fails, the checks after it are not reached."""
    error = too_many_arguments(count)
    order = [c.name for c in block.checks]
    checks = [*block.checks[: order.index("arguments")], Check("arguments", False, error)]
    checks += [Check(c.name, None) for c in block.checks[len(checks) :]]
    return replace(block, checks=checks, call=None, error=error)


def as_text(family: str, text: str, blocks: list[Block], policy: str) -> ParseResult:
    """A turn a server hands back as plain text: the calls it found but could not read are dropped, none is run."""
    errors = [BlockError(b.index, b.error) for b in blocks if b.error]
    return ParseResult(family, policy, [], errors, True, blocks, returned_as_text=True, answer=text.strip())
