"""The checks every family's parser runs on one call, with the same order and wording as Qwen's.

A family finds its calls its own way (a regex over its markers, as the vLLM parser for that
format does); each call it finds is then checked here, as `engine.core.parse` checks a Qwen
`<tool_call>` block: closed, valid strict JSON, the call's shape, a supplied tool, then the
arguments (object, required, no extra, types; jsonschema). The error strings that name a
format's own markers are the family's; the argument errors are Qwen's, word for word.
"""

from __future__ import annotations

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

__all__ = [
    "MAX_CALLS",
    "as_text",
    "check_named_call",
    "check_object_call",
    "finish_call",
    "known_tools",
    "result_of",
    "too_many_calls",
]


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
) -> Block:
    """A call found and read (its `checks` so far), checked for a supplied tool, then its arguments."""
    if name not in known:
        error = unknown_tool(name, list(known))
        checks.append(Check("name", False, error))
        return Block(index, body, start, end, pad_checks(checks, NATIVE_CHECKS), None, error)
    checks.append(Check("name", True))
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


def as_text(family: str, text: str, blocks: list[Block], policy: str) -> ParseResult:
    """A turn a server hands back as plain text: the calls it found but could not read are dropped, none is run."""
    errors = [BlockError(b.index, b.error) for b in blocks if b.error]
    return ParseResult(family, policy, [], errors, True, blocks, returned_as_text=True, answer=text.strip())
