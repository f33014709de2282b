"""Qwen3-Coder: a call that is not JSON. Qwen3's tokenizer, Qwen3-Coder's own template, calls as XML tags.

The prompt is Qwen3-Coder's chat template (assets/qwen3-coder-template), which writes each tool as
XML and asks for a call as

    <tool_call>
    <function=NAME>
    <parameter=ARG>
    VALUE
    </parameter>
    </function>
    </tool_call>

A value is raw text, not JSON: the parser reads it as its parameter's schema type says (a
string as written, an integer from its digits, an object or array from JSON, or from the Python
literal the template itself writes back into history, `{'a': 1}`, `True`).

Under the strict policy (per-block) a call is exactly that layout: each `<tool_call>` block is
closed, holds one `<function=NAME>` … `</function>`, and inside it only `<parameter=NAME>` …
`</parameter>` blocks, each name once; a value that does not read as its type stays text, which
the type check then refuses. Under `server`, as vLLM's qwen3coder_tool_parser.py and SGLang's
qwen3_coder_detector.py read it: a block may end the reply with no `</tool_call>` or `</function>`,
a `<function=…>` with no `<tool_call>` around it is still a call, a value with no `</parameter>`
ends at the next `<parameter=`, a value that does not read as its type stays text (a boolean that
is neither true nor false is false), and a later value of the same name replaces an earlier one.

Both readings run in time linear in the turn: they search from marker to marker by index and never
slice off the rest of the text (the first version copied the rest at every `</parameter>`, and
searched for each value's end afresh from the value, so a call of 200,000 parameters ran for
minutes), and the server's reading finds every structural tag of a call once, then looks each
value's end up. Where vLLM reads every parameter of a call, both readings stop after MAX_ARGUMENTS
(calls.py): a call of more is one error that says how many it holds, with the same verdict as
any call over the bound, and its values are not read.
"""

from __future__ import annotations

import ast
import json
import math
import re
from bisect import bisect_left

from ...settings import ASSETS
from ..parse import BLOCK_PATTERN, NATIVE_CHECKS, Block, Check, ParseResult, pad_checks
from ..tooldefs import tool_name
from .base import Opener
from .calls import MAX_ARGUMENTS, MAX_CALLS, as_text, finish_call, known_tools, result_of
from .hf import TemplateFormat

OPEN, CLOSE = "<tool_call>", "</tool_call>"
FUNCTION, FUNCTION_END = "<function=", "</function>"
PARAMETER, PARAMETER_END = "<parameter=", "</parameter>"
SPACE = re.compile(r"\s*")  # what str.strip() strips: \s is the same set of characters
LINE_PARAMETER = re.compile(r"^<parameter=", re.MULTILINE)  # a parameter's tag at the start of the text or a line
BAD_NAME = re.compile(r"[{}<>\"'\s]")  # what a function's name may not hold (vLLM's _is_valid_function_name)
STRINGS = ("string", "str", "text", "varchar", "char", "enum")  # the types whose value is the text as written
MAX_LITERAL = 10_000  # the longest value read as a Python literal (ast.literal_eval is quadratic on some input)

NOT_CLOSED = "error: the call is not closed with </tool_call>; was the reply cut off?"
NO_FUNCTION = "error: the call does not start with <function=NAME> inside <tool_call>"
NO_FUNCTION_END = "error: the call does not end with </function> before </tool_call>"
PARAMETER_NOT_CLOSED = "error: <parameter={name}> is not closed with </parameter>"
STRAY_TEXT = "error: text outside a parameter: inside <function=…> only <parameter=NAME>…</parameter> blocks may stand"
TWICE = "error: the parameter {name} is given twice"
BAD_FUNCTION_NAME = "error: the function's name is empty or holds a space, a quote or a bracket"


def _type_of(schema: object) -> str:
    """The parameter's type as the servers pick it: its `type` (the first that is not null), or anyOf's first."""
    if not isinstance(schema, dict):
        return "string"
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind is None and isinstance(schema.get("anyOf"), list):
        kind = next((o.get("type") for o in schema["anyOf"] if isinstance(o, dict) and o.get("type") != "null"), None)
    return str(kind or "string").strip().lower()


def _nullable(schema: object) -> bool:
    """Whether the schema admits null (`"type": "null"`, a type list with null, or a null option of anyOf)."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    options = schema.get("anyOf") if isinstance(schema.get("anyOf"), list) else []
    return (
        kind == "null"
        or (isinstance(kind, list) and "null" in kind)
        or any(isinstance(o, dict) and o.get("type") == "null" for o in options)
    )


def _jsonable(value: object) -> object:
    """A Python literal as JSON would hold it (tuples as lists), or ValueError for what JSON has no word for."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not a JSON number")
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _jsonable(v) for k, v in value.items()}
    raise ValueError(f"{type(value).__name__} is not JSON")


def _container(text: str) -> object:
    """An object or array from JSON, or from the Python literal the template writes; the text itself if neither."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    if len(text) > MAX_LITERAL:
        return text
    try:
        return _jsonable(ast.literal_eval(text.strip()))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def read_value(text: str, schema: object, lenient: bool) -> object:
    """A parameter's raw text read as its schema's type (vLLM's conversion where `lenient`, else only exact forms).

    A value that does not read as its type stays the text it was, so the argument check names the
    type it should have had; the lenient reading turns any boolean but "true" into false, as vLLM does.
    """
    kind = _type_of(schema)
    if text.strip().lower() in ("null", "none") and (_nullable(schema) or kind not in STRINGS):
        return None
    if kind in STRINGS:
        return text
    if kind.startswith(("int", "uint", "long", "short", "unsigned")):
        if lenient or re.fullmatch(r"-?\d+", text.strip()):
            try:
                return int(text)
            except ValueError:
                return text
        return text
    if kind.startswith(("num", "float")):
        if lenient or re.fullmatch(r"-?\d+(\.\d+)?([eE][+-]?\d+)?", text.strip()):
            try:
                number = float(text)
            except ValueError:
                return text
            if not math.isfinite(number):
                return text
            return int(number) if number.is_integer() else number
        return text
    if kind in ("boolean", "bool", "binary"):
        word = text.strip().lower()
        if word in ("true", "false"):
            return word == "true"
        return False if lenient else text
    return _container(text)


def _properties(known: dict[str, dict]) -> dict[str, dict]:
    """name -> its parameters' properties (what a value's type is read from), from the supplied tools' schemas."""
    return {name: p["properties"] if isinstance(p.get("properties"), dict) else {} for name, p in known.items()}


# -- the strict reading: the documented layout only -------------------------------------------------------
def read_strict_block(inner: str) -> tuple[str | None, list[tuple[str, str]], str | None, str, int]:
    """(function name, [(parameter, raw value)], the error, the check that failed, the parameters written) of
    one block's inside; past MAX_ARGUMENTS parameters the reading stops, and the last figure says how many
    `<parameter=` tags the call holds."""
    body = inner.strip()
    if not body.startswith(FUNCTION) or ">" not in body:
        return None, [], NO_FUNCTION, "json", 0
    name_end = body.index(">")
    name = body[len(FUNCTION) : name_end]
    if not body.endswith(FUNCTION_END):
        return name, [], NO_FUNCTION_END, "json", 0
    rest, cursor, found = body[name_end + 1 : -len(FUNCTION_END)], 0, []
    while len(found) <= MAX_ARGUMENTS:
        # only whitespace between the parameters (searched from the cursor: a slice of the rest per
        # parameter made a call of many parameters quadratic)
        cursor = SPACE.match(rest, cursor).end()
        if cursor == len(rest):
            break
        tag_end = rest.find(">", cursor)
        if not rest.startswith(PARAMETER, cursor) or tag_end < 0:
            return name, found, STRAY_TEXT, "json", len(found)
        parameter = rest[cursor + len(PARAMETER) : tag_end]
        close = rest.find(PARAMETER_END, tag_end)
        if close < 0:
            return name, found, PARAMETER_NOT_CLOSED.format(name=parameter[:40]), "json", len(found)
        found.append((parameter, _one_newline_off(rest[tag_end + 1 : close])))
        cursor = close + len(PARAMETER_END)
    if len(found) > MAX_ARGUMENTS:
        return name, found, None, "", rest.count(PARAMETER)
    if not name or BAD_NAME.search(name):
        return name, found, BAD_FUNCTION_NAME, "shape", len(found)
    seen: set[str] = set()
    for parameter, _ in found:
        if parameter in seen:
            return name, found, TWICE.format(name=parameter[:40]), "shape", len(found)
        seen.add(parameter)
    return name, found, None, "", len(found)


def _one_newline_off(value: str) -> str:
    """The value as written between its tags, less the one newline the layout puts on each side."""
    value = value[1:] if value.startswith("\n") else value
    return value[:-1] if value.endswith("\n") else value


# -- the servers' reading ------------------------------------------------------------------------------------
# Each search below runs over the text once, from marker to marker: the first version sliced the rest of the
# text at every candidate tag, so a run of </parameter> (or of </tool_call>) was quadratic, and looked for each
# value's end afresh from the value, so a call of many parameters was cubic.
def structural_ends(text: str, tag: str, followers: tuple[str, ...], start: int = 0, first: bool = False) -> list[int]:
    """Every `tag` from `start` followed (after whitespace) by the end of the text or one of `followers`,
    in order (only the first where `first`)."""
    found, at = [], text.find(tag, start)
    while at >= 0:
        after = SPACE.match(text, at + len(tag)).end()
        if after == len(text) or text.startswith(followers, after):
            found.append(at)
            if first:
                break
        at = text.find(tag, at + len(tag))
    return found


def _first_structural(text: str, tag: str, followers: tuple[str, ...], start: int = 0) -> int:
    """The first such `tag` from `start`; -1 if none."""
    found = structural_ends(text, tag, followers, start, first=True)
    return found[0] if found else -1


def server_blocks(text: str) -> list[tuple[str, int, int, bool]]:
    """(inside, start, end, closed) of each call as vLLM finds them: a block ends at a `</tool_call>` followed
    by another `<tool_call>` or the end; the last may be unclosed; with no `<tool_call>`, the whole reply."""
    found, cursor = [], 0
    while len(found) < MAX_CALLS:
        start = text.find(OPEN, cursor)
        if start < 0:
            break
        inside = start + len(OPEN)
        # each block's search runs from its own start to its end: the searches never overlap
        end = _first_structural(text, CLOSE, (OPEN,), inside)
        if end < 0:
            found.append((text[inside:], start, len(text), False))
            break
        found.append((text[inside:end], start, end + len(CLOSE), True))
        cursor = end + len(CLOSE)
    return found or [(text, 0, len(text), False)]


class _ParameterTags:
    """Where the `<parameter=` tags of one function's body stand: each at the start of a line, and those naming
    one of the tool's parameters, found once, so the end of every value is looked up, not searched for."""

    def __init__(self, body: str, expected: set[str] | None):
        self.starts = [m.start() for m in LINE_PARAMETER.finditer(body)]
        self.expected = expected
        self.named: list[int] = []  # the tags that name one of `expected`, and their names
        self.names: list[str] = []
        longest = max(map(len, expected), default=0) if expected else 0
        tag_end = -1
        for start in self.starts:
            if tag_end < start and tag_end != len(body):
                # one search per stretch: the next ">" serves every tag before it
                tag_end = body.find(">", start)
                tag_end = len(body) if tag_end < 0 else tag_end
            name_at = start + len(PARAMETER)
            if expected and tag_end < len(body) and tag_end - name_at <= longest and body[name_at:tag_end] in expected:
                self.named.append(start)
                self.names.append(body[name_at:tag_end])
        # for each named tag, the next one that names another parameter
        self.other = [len(self.named)] * len(self.named)
        for index in range(len(self.named) - 2, -1, -1):
            following = index + 1
            self.other[index] = following if self.names[following] != self.names[index] else self.other[following]

    def next_tag(self, at: int) -> int:
        """The first tag at a line's start from `at`, whatever it names; -1 if none."""
        which = bisect_left(self.starts, at)
        return self.starts[which] if which < len(self.starts) else -1

    def next_other(self, at: int, parameter: str) -> int:
        """Where a value that starts at `at` ends with no `</parameter>`: the next tag naming another of the
        tool's parameters (any tag, where the tool is not known); -1 if none."""
        if self.expected is None:
            return self.next_tag(at)
        which = bisect_left(self.named, at)
        if which < len(self.named) and self.names[which] == parameter:
            which = self.other[which]
        return self.named[which] if which < len(self.named) else -1


def read_server_function(inside: str, parameters: dict[str, dict]) -> tuple[str, list[tuple[str, str]], int] | None:
    """The name, raw values and number of parameters of the `<function=…>` in a block, read leniently; None where
    there is no readable one. Past MAX_ARGUMENTS values the reading stops (the number says how many there are).

    `parameters` maps each tool to its properties: a value with no `</parameter>` ends at the next
    `<parameter=` that names one of its tool's (vLLM's fallback), not at one quoted inside it."""
    at = inside.find(FUNCTION)
    if at < 0:
        return None
    name_at = at + len(FUNCTION)
    name_end = inside.find(">", name_at)
    if name_end < 0 or name_end == name_at or BAD_NAME.search(inside, name_at, name_end):
        return None
    name, body_at = inside[name_at:name_end], name_end + 1
    end = _first_structural(inside, FUNCTION_END, (CLOSE,), body_at)
    body = inside[body_at:] if end < 0 else inside[body_at:end]
    expected = set(parameters.get(name) or ()) or None
    tags = _ParameterTags(body, expected)
    closes = structural_ends(body, PARAMETER_END, (PARAMETER, FUNCTION_END, CLOSE))
    values, cursor = [], 0
    while len(values) <= MAX_ARGUMENTS:
        start = tags.next_tag(cursor)
        if start < 0:
            break
        tag_end = body.find(">", start)
        if tag_end < 0:
            break
        parameter, value_at = body[start + len(PARAMETER) : tag_end], tag_end + 1
        which = bisect_left(closes, value_at)
        close = closes[which] if which < len(closes) else -1
        following = tags.next_other(value_at, parameter)
        if close >= 0 and (following < 0 or close < following):
            value, cursor = body[value_at:close], close + len(PARAMETER_END)
        else:
            # no </parameter> before the next parameter of the tool's: the value ends there (or at the end)
            stop = len(body) if following < 0 else following
            value, cursor = body[value_at:stop], stop
        values.append((parameter, _one_newline_off(value)))
    count = len(values) if len(values) <= MAX_ARGUMENTS else len(tags.starts)
    return name, values, count


def _arguments(values: list[tuple[str, str]], count: int, schema: dict, lenient: bool) -> dict:
    """The values read as their types; none where the call holds more than MAX_ARGUMENTS (it is refused unread).
    A later value of the same name replaces an earlier one, as a dict built in order does."""
    if count > MAX_ARGUMENTS:
        return {}
    return {key: read_value(raw, schema.get(key), lenient=lenient) for key, raw in values}


class Qwen3CoderFormat(TemplateFormat):
    name = "qwen3-coder"
    family = "qwen3-coder"
    label = "Qwen3-Coder"
    maker = "Alibaba Qwen"
    order = 5
    folder = ASSETS / "qwen3-tokenizer"  # Qwen3-Coder's tokenizer is Qwen3's
    template_folder = ASSETS / "qwen3-coder-template"
    special_opener = True
    opener = Opener("<tool_call>", "a special token")
    renderer = "Qwen3-Coder's chat template (assets/qwen3-coder-template) via transformers' Jinja renderer"
    parser_reference = "vLLM qwen3_coder tool parser"
    policies = ("per-block", "server")
    server_reference = "vLLM qwen3coder_tool_parser.py, SGLang qwen3_coder_detector.py"
    argument_style = "qwen_xml"
    name_marker = FUNCTION
    name_prefix = OPEN + "\n" + FUNCTION
    check_titles = {  # noqa: RUF012
        "closed": "the call is closed with </tool_call>",
        "json": "<function=NAME> … </function> holds only <parameter=NAME> … </parameter> blocks",
        "shape": "the function is named, and each parameter given once",
    }

    @property
    def chat_template(self) -> str:  # type: ignore[override]
        return (self.template_folder / "chat_template.jinja").read_text(encoding="utf-8")

    def tool_spans(self, text: str, tools: list[dict]) -> list[tuple[str, int, int]]:
        # each tool is one <function> … </function> element inside <tools>
        found, cursor = [], text.find("<tools>")
        for tool in tools:
            name = tool_name(tool)
            start = text.find(f"\n<function>\n<name>{name}</name>", cursor)
            end = text.find("\n</function>", start + 1)
            if start >= 0 and end >= 0:
                found.append((name or "?", start, end + len("\n</function>")))
                cursor = end
        return found

    def call_tag(self, name: str) -> tuple[str, str]:
        return f"{OPEN}\n{FUNCTION}{name}>\n", f"{FUNCTION_END}\n{CLOSE}"

    def write_call(self, name: str, arguments: dict) -> str:
        # the template's own words for an assistant's call: a value that is not a string as its `| string` writes it
        # (Python's str: True, {'a': 1})
        parameters = "".join(
            f"{PARAMETER}{key}>\n{value if isinstance(value, str) else str(value)}\n{PARAMETER_END}\n"
            for key, value in arguments.items()
        )
        return f"{OPEN}\n{FUNCTION}{name}>\n{parameters}{FUNCTION_END}\n{CLOSE}"

    def result_text(self, result: str) -> str:
        return f"<tool_response>\n{result}\n</tool_response>"

    def parse(self, text: str, tools: list[dict], policy: str = "per-block", recover_bare: bool = False) -> ParseResult:
        if policy == "server":
            return self.parse_server(text, tools)
        known = known_tools(tools)
        properties = _properties(known)
        blocks: list[Block] = []
        for match in BLOCK_PATTERN.finditer(text):  # Qwen3's own blocks: the same tags
            if len(blocks) == MAX_CALLS:
                break
            closed = match.group(1) is not None
            inner = match.group(1) if closed else match.group(2)
            start, end, index = match.start(), match.end(), len(blocks)
            if not closed:
                checks = [Check("closed", False, NOT_CLOSED)]
                blocks.append(Block(index, inner, start, end, pad_checks(checks, NATIVE_CHECKS), None, NOT_CLOSED))
                continue
            name, values, error, failed, count = read_strict_block(inner)
            checks = [Check("closed", True)]
            if error:
                if failed == "shape":
                    checks.append(Check("json", True))
                checks.append(Check(failed, False, error))
                blocks.append(Block(index, inner, start, end, pad_checks(checks, NATIVE_CHECKS), None, error))
                continue
            checks += [Check("json", True), Check("shape", True)]
            arguments = _arguments(values, count, properties.get(name, {}), lenient=False)
            blocks.append(finish_call(index, inner, start, end, checks, name, arguments, known, count))
        return result_of(self.name, blocks, text)

    def parse_server(self, text: str, tools: list[dict]) -> ParseResult:
        """Each `<function=…>` as vLLM's qwen3_coder parser reads it; a reply with none is text."""
        if FUNCTION not in text:
            return result_of(self.name, [], text, "server")
        known = known_tools(tools)
        properties = _properties(known)
        blocks: list[Block] = []
        for inside, start, end, _closed in server_blocks(text):
            read = read_server_function(inside, properties)
            if read is None:
                continue  # no readable <function=NAME>: vLLM drops it
            name, values, count = read
            arguments = _arguments(values, count, properties.get(name, {}), lenient=True)
            checks = [Check("closed", True), Check("json", True), Check("shape", True)]
            blocks.append(finish_call(len(blocks), inside, start, end, checks, name, arguments, known, count))
        if not blocks:
            return as_text(self.name, text, [], "server")
        return result_of(self.name, blocks, text, "server")

    def written_call(self, block: Block, turn: str) -> tuple[str, dict] | None:
        name, values, error, _, count = read_strict_block(block.text)
        if error or name is None or count > MAX_ARGUMENTS:
            return None if block.call is None else (block.call.name, block.call.arguments)
        return name, dict(values)


FORMAT = Qwen3CoderFormat()
