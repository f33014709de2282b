"""Find tool calls in a model's turn and check each one, natively or in ReAct text.

Native blocks are found with vLLM's Qwen regex `<tool_call>(.*?)</tool_call>|<tool_call>(.*)`
(the second branch is a block cut off at the token limit). Each block is checked on its own
with the Berkeley Function Calling Leaderboard's checks ([[bfcl]], as [[reading-tool-calls]]
uses them): strict JSON, exactly `name` and `arguments`, a supplied tool, an object of arguments, every required argument,
no unlisted one, each value of its schema's type (jsonschema). Every failure has one short,
fixed error string, which goes back to the model as that call's result.

Policies for a turn with good and bad blocks: `per-block` runs the good calls and reports
each bad one; `vllm` drops every call when any block is not valid JSON and returns the turn
as text, as vLLM's Qwen parser does, and reads a final block with no `</tool_call>` (its
regex's second branch) as a call when its JSON is whole. `server` is each family's reading by
the servers' own parsers (vLLM's and SGLang's); for Qwen3 it is the vllm policy under a name
every family shares. A turn with no block is a final answer.

Reasoning is separated first, as vLLM's Qwen3 reasoning parser does: the text up to the first
`</think>` (a leading `<think>` dropped) is reasoning, and a `<tool_call>` written there is
never run; a `<think>` that is never closed makes the rest of the turn reasoning.

Limits, because the turn is the model's and the model's errors go back into its context: at
most MAX_CALLS blocks are checked per turn (the rest are reported as one error, not run),
every error string is at most MAX_ERROR_CHARS long and quotes at most QUOTE_CHARS of what the
model wrote, and a number too large for a float (`1e400`) is refused: JSON has no infinity.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import re2
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, UnknownType, ValidationError
from jsonschema.validators import extend
from referencing.exceptions import Unresolvable

POLICIES = ("per-block", "vllm")  # the harness policies lesson 4 compares
STRICT, SERVER = "per-block", "server"
PARSE_POLICIES = (*POLICIES, SERVER)  # every name a parse takes: the harness policies and each family's server reading
SERVER_POLICIES = ("vllm", SERVER)  # the policies that read a turn as a server does
MAX_CALLS = 16  # blocks checked (and run) per turn; the rest are reported, not run
MAX_ERROR_CHARS = 300  # the longest error string that goes back to the model
QUOTE_CHARS = 40  # the most of the model's own text an error quotes (a name, an argument)
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
BLOCK_PATTERN = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)

# the checks, in the order they run; a block stops at its first failure
NATIVE_CHECKS = ("closed", "json", "shape", "name", "arguments", "required", "no extra", "types")
REACT_CHECKS = ("format", "json", "name", "arguments", "required", "no extra", "types")
CHECK_TITLES = {
    "closed": "the block is closed with </tool_call>",
    "format": "the reply has one Action and its Action Input",
    "json": "valid JSON",
    "shape": 'an object with exactly "name" and "arguments"',
    "name": "a tool the harness offered",
    "arguments": "the arguments are a JSON object",
    "required": "every required argument is there",
    "no extra": "no argument the schema does not list",
    "types": "every value fits its schema",
    "count": f"at most {MAX_CALLS} calls in one turn",
}

# the fixed error wording
NOT_CLOSED = "error: the <tool_call> block is not closed with </tool_call>; was the reply cut off?"
EMPTY_BLOCK = "error: the <tool_call> block is empty"
NOT_JSON = "error: the text inside <tool_call></tool_call> is not valid JSON"
ENDED_EARLY = (
    "error: the block ended early, at a </tool_call> written inside a JSON string; "
    "write that tag inside a string as <\\/tool_call>"
)
RAW_NEWLINE = "error: a string in the call contains a raw newline; write it as \\n"
BAD_SHAPE = 'error: a tool call must be a JSON object with exactly "name" and "arguments"'
ARGS_NOT_OBJECT = 'error: "arguments" must be a JSON object'
REACT_NOT_JSON = "error: the Action Input is not valid JSON"
REACT_FENCED = "error: write the Action Input as plain JSON, not inside a ``` code fence"
REACT_NO_INPUT = "error: an Action: line must be followed by an Action Input: line"
REACT_NO_ACTION = "error: write either an Action: with its Action Input:, or a Final Answer:"
REACT_BOTH = "error: write an Action or a Final Answer, not both"
REACT_INPUT_NOT_OBJECT = "error: the Action Input must be a JSON object"


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """repr(value), cut to `limit` characters with the full length said, so an error stays short."""
    text = repr(value)
    if len(text) <= limit:
        return text
    length = len(value) if isinstance(value, str | list | dict) else len(text)
    return f"{text[:limit]}... ({length:,} characters)"


def cap_error(error: str) -> str:
    """An error cut to MAX_ERROR_CHARS; every error a block reports passes through here."""
    return error if len(error) <= MAX_ERROR_CHARS else error[: MAX_ERROR_CHARS - 3] + "..."


def unknown_tool(name: object, names: list[str]) -> str:
    return cap_error(f"error: unknown tool {quote(name)}; the tools are {', '.join(names) or '(none)'}")


def too_large_number(text: str) -> str:
    return f"error: the number {quote(text)} is too large to read (it would be infinity, which is not JSON); write a finite number"


def too_many_calls(count: int) -> str:
    return (
        f"error: this turn has {count:,} tool calls; at most {MAX_CALLS} are run per turn, so calls "
        f"{MAX_CALLS + 1} to {count:,} were not run; make the others in a later turn"
    )


def react_two_actions(count: int) -> str:
    return f"error: write one Action per reply; this reply has {count}"


@dataclass(frozen=True)
class Call:
    """A call that passed every check."""

    name: str
    arguments: dict
    block: int  # index of the block it came from


@dataclass(frozen=True)
class BlockError:
    block: int
    error: str


@dataclass(frozen=True)
class Check:
    name: str  # a key of CHECK_TITLES
    passed: bool | None  # None: not reached, an earlier check failed
    error: str | None = None


@dataclass(frozen=True)
class Block:
    """One block the parser found, with every check's verdict."""

    index: int
    text: str  # the text between the tags (or the Action Input)
    start: int  # where the block starts and ends in the turn text
    end: int
    checks: list[Check]
    call: Call | None
    error: str | None


@dataclass(frozen=True)
class ParseResult:
    style: str
    policy: str
    calls: list[Call]
    errors: list[BlockError]
    final: bool  # the turn ends the run: no call to run
    blocks: list[Block] = field(default_factory=list)
    returned_as_text: bool = False  # vllm policy: the turn came back as plain text
    answer: str | None = None  # the final answer's text, when final
    reasoning: str | None = None  # the text inside <think>...</think>, never searched for calls


# -- strict JSON ----------------------------------------------------------------------------
class _JsonProblem(ValueError):
    pass


def _reject_constant(name: str):
    raise _JsonProblem(f"{name} is not JSON")


def finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _JsonProblem(too_large_number(text))
    return value


def _reject_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise _JsonProblem("duplicate key")
    return dict(pairs)


def load_strict_json(text: str) -> tuple[object, str | None]:
    """Python's strict json.loads (no raw control characters, NaN, infinity or duplicate keys): (value, error)."""
    try:
        value = json.loads(
            text, parse_constant=_reject_constant, parse_float=finite_float, object_pairs_hook=_reject_duplicates
        )
        return value, None
    except json.JSONDecodeError as error:
        if error.msg == "Invalid control character at" and text[error.pos : error.pos + 1] in "\n\r":
            return None, RAW_NEWLINE
        return None, NOT_JSON
    except _JsonProblem as problem:
        return None, str(problem) if str(problem).startswith("error:") else NOT_JSON
    except (ValueError, RecursionError):  # NaN, numbers too long to read, nesting too deep
        return None, NOT_JSON


def ends_inside_string(text: str) -> bool:
    """Whether JSON text stops inside an open string (what a </tool_call> in a string leaves behind)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        return error.msg == "Unterminated string starting at"
    except (ValueError, RecursionError):
        return False
    return False


# -- the checks on one call -------------------------------------------------------------------
def tool_map(tools: list[dict]) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for tool in tools:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            found[fn["name"]] = params if isinstance(params, dict) else {"type": "object", "properties": {}}
    return found


# JSON Schema's "pattern" keywords run with RE2 (linear time), not Python's backtracking re:
# a schema a user pasted, such as {"pattern": "^(a+)+$"}, cannot stall the server
def re2_search(pattern: str, text: str) -> bool:
    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options).search(text) is not None


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not re2_search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, patterns, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if re2_search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _unique_key(value: object) -> object:
    """A hashable stand-in for a JSON value, equal where JSON Schema calls two values equal (1 == 1.0, true != 1)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_unique_key(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, _unique_key(v)) for k, v in value.items()))
    return ("other", repr(value))


def _unique_items(validator, unique, instance, schema):
    """uniqueItems in one pass over hashed items (jsonschema compares every pair: 4,000 objects took 30 s)."""
    if not unique or not validator.is_type(instance, "array"):
        return
    seen = set()
    for item in instance:
        key = _unique_key(item)
        if key in seen:
            yield ValidationError(f"{instance!r:.200} has non-unique elements")
            return
        seen.add(key)


def _is_integer(checker, instance) -> bool:
    """An int, as BFCL's checker reads "integer" (type(value) is int): 10.0 is a float, though JSON Schema counts
    it an integer (its "integer" is any number with no fraction)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


ArgumentValidator = extend(
    Draft202012Validator,
    {"pattern": _pattern, "patternProperties": _pattern_properties, "uniqueItems": _unique_items},
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
)


def _type_words(expected: object) -> str:
    if isinstance(expected, list):
        return " or ".join(_type_words(e) for e in expected)
    article = "an" if str(expected)[:1] in "aeiou" else "a"
    return f"{article} {expected}"


def _allows_extra(params: dict, key: str) -> bool:
    """Whether an argument the schema does not list by name is still allowed: by a pattern
    property it matches (a search, as JSON Schema's patterns are) or by additionalProperties
    other than false. Without either, an unlisted argument is refused (the strict reading a
    grammar and OpenAI's strict mode share)."""
    patterns = params.get("patternProperties")
    if isinstance(patterns, dict):
        for pattern in patterns:
            try:
                if re2_search(pattern, key):
                    return True
            except re2.error:
                continue
    extra = params.get("additionalProperties", False)
    return extra is not False and "additionalProperties" in params


def strict_schema(schema: object, in_all_of: bool = False) -> object:
    """A copy of a schema in which every object schema that lists properties, and says nothing of
    others, refuses unlisted ones (additionalProperties: false), at every depth.

    This is the checker's side of one rule with the grammar: xgrammar's JSON-schema grammar
    forbids unlisted properties in every object that lists its own, so the checker does too.
    Members of an allOf are left alone: each would forbid the others' properties."""
    if isinstance(schema, list):
        return [strict_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    copy = {}
    for key, value in schema.items():
        if key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas") and isinstance(
            value, dict
        ):
            copy[key] = {k: strict_schema(v) for k, v in value.items()}
        elif key == "allOf" and isinstance(value, list):
            copy[key] = [strict_schema(v, in_all_of=True) for v in value]
        elif key in ("enum", "const", "required", "default", "examples", "dependentRequired"):
            copy[key] = value
        else:
            copy[key] = strict_schema(value)
    if (
        isinstance(copy.get("properties"), dict)
        and not in_all_of
        and not {"additionalProperties", "patternProperties", "unevaluatedProperties"} & set(copy)
    ):
        copy["additionalProperties"] = False
    return copy


def check_arguments(name: str, arguments: object, params: dict) -> tuple[list[Check], str | None]:
    """The argument checks (object, required, no extra, types) for a known tool."""
    checks: list[Check] = []
    if not isinstance(arguments, dict):
        return [Check("arguments", False, ARGS_NOT_OBJECT)], ARGS_NOT_OBJECT
    checks.append(Check("arguments", True))
    props = params.get("properties") if isinstance(params.get("properties"), dict) else {}
    required = (
        [r for r in params.get("required", []) if isinstance(r, str)]
        if isinstance(params.get("required"), list)
        else []
    )
    missing = [r for r in required if r not in arguments]
    if missing:
        listed = ", ".join(quote(m) for m in missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        error = cap_error(f"error: missing required argument{'s' if len(missing) > 1 else ''} {listed} for {name}")
        return [*checks, Check("required", False, error)], error
    checks.append(Check("required", True))
    extra = [a for a in arguments if a not in props and not _allows_extra(params, a)]
    if extra:
        listed = ", ".join(quote(e) for e in extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        error = cap_error(f"error: {name} has no argument{'s' if len(extra) > 1 else ''} {listed}")
        return [*checks, Check("no extra", False, error)], error
    checks.append(Check("no extra", True))
    try:
        problems = sorted(
            ArgumentValidator(strict_schema(params)).iter_errors(arguments), key=lambda e: [str(p) for p in e.path]
        )
    except (SchemaError, UnknownType, TypeError, ValueError, RecursionError, re2.error, Unresolvable):
        error = f"error: the schema of {name} is not a valid JSON Schema, so its arguments cannot be checked"
        return [*checks, Check("types", False, error)], error
    if problems:
        first = problems[0]
        arg = quote(str(first.path[0])) if first.path else "'arguments'"
        if first.validator == "type":
            error = f"error: argument {arg} of {name} must be {_type_words(first.validator_value)}"
        else:
            error = f"error: argument {arg} of {name}: {first.message[:200]}"
        error = cap_error(error)
        return [*checks, Check("types", False, error)], error
    return [*checks, Check("types", True)], None


def check_call_object(call: object, tools: dict[str, dict]) -> tuple[list[Check], Call | None, str | None]:
    """The checks after JSON: shape, name, then the arguments."""
    if not isinstance(call, dict) or set(call) != {"name", "arguments"}:
        return [Check("shape", False, BAD_SHAPE)], None, BAD_SHAPE
    checks = [Check("shape", True)]
    name = call["name"]
    if not isinstance(name, str) or name not in tools:
        error = unknown_tool(name, list(tools))
        return [*checks, Check("name", False, error)], None, error
    checks.append(Check("name", True))
    more, error = check_arguments(name, call["arguments"], tools[name])
    return [*checks, *more], (None if error else Call(name, call["arguments"], -1)), error


def pad_checks(checks: list[Check], order: tuple[str, ...]) -> list[Check]:
    """Every check in order, those never reached marked None."""
    done = {c.name for c in checks}
    return [*checks, *(Check(n, None) for n in order if n not in done)]


# -- a Qwen3 turn's reasoning ------------------------------------------------------------------------
def split_reasoning(text: str) -> tuple[str | None, int]:
    """(the reasoning, where the content starts) of a turn, as vLLM's Qwen3 reasoning parser splits it.

    The reasoning runs to the first </think> (a leading <think> is not part of it); a <think>
    that is never closed makes the rest of the turn reasoning (cut off while thinking). A turn
    with neither tag has no reasoning: (None, 0)."""
    close = text.find(THINK_CLOSE)
    opened = text.find(THINK_OPEN)
    if close >= 0 and (opened < 0 or opened < close):
        start = opened + len(THINK_OPEN) if 0 <= opened < close else 0
        return text[start:close], close + len(THINK_CLOSE)
    if opened >= 0 and not text[:opened].strip():
        return text[opened + len(THINK_OPEN) :], len(text)
    return None, 0
