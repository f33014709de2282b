"""Llama 3.1: Meta's JSON tool format, with no opener: a call is a bare `{"name": ..., "parameters": ...}`.

The prompt is Meta's official Llama 3.1 chat template (assets/llama3.1-tokenizer/chat_template.jinja),
which by default puts the tool definitions, pretty-printed JSON, into the first user message
with its own instructions. A call is the JSON object the template itself writes back for an
assistant's tool call. Under the strict policy (per-block) the reply is a call when it starts
(after an optional `<|python_tag|>`) with `{`, several calls are separated by `; `, and the
arguments may be under "parameters" or "arguments". Under `server`, as the servers' parsers read
it: a call may follow leading text (vLLM's llama_tool_parser.py), `<|python_tag|>` may follow
text (SGLang's llama32_detector.py), calls may follow each other with no `;` and text may follow
them (vLLM's llama_tool_parser.py), and a JSON list holds several calls (SGLang's
llama32_detector.py); JSON that does not parse is text, not an error.

The servers try Python's JSON decoder at every `{` and `[` of the reply; here `JsonStarts`
(json_starts.py) says where the value at each bracket ends, for the whole reply in one linear pass,
and the decoder reads only the values it finds (tried at every bracket, a run of `{` was quadratic,
each failure counting lines from the start of the reply, and a run of `[` recursed a thousand levels
deep from each bracket). One verdict differs from the servers', on purpose: JSON nested deeper than
MAX_NESTING (128) brackets is text, where Python's decoder gives up only near 1,000 levels.
"""

from __future__ import annotations

import json
import re

from ...settings import ASSETS
from ..parse import NATIVE_CHECKS, Block, Check, ParseResult, pad_checks
from .base import Opener, find_json_end
from .calls import MAX_CALLS, check_object_call, known_tools, parse_json_text, result_of
from .hf import TemplateFormat
from .json_starts import FAILED, JsonStarts

PYTHON_TAG = "<|python_tag|>"
NOT_JSON = "error: the call is not valid JSON"
EMPTY = "error: the call is empty"
BAD_SHAPE = 'error: a tool call must be a JSON object with exactly "name" and "parameters"'
SEPARATOR = re.compile(r"\s*;\s*")
OPENING = re.compile(r"[\[{]")  # where a JSON object or list of calls may start (server policy)


class Llama31Format(TemplateFormat):
    name = "llama3.1"
    family = "llama3.1"
    label = "Llama 3.1"
    maker = "Meta"
    order = 10
    folder = ASSETS / "llama3.1-tokenizer"
    template_file = "chat_template.jinja"
    opener = Opener(None, "none: a call is bare JSON")
    renderer = "Meta's Llama 3.1 chat template via transformers' Jinja renderer"
    parser_reference = "vLLM llama3_json tool parser"
    policies = ("per-block", "server")
    server_reference = "vLLM llama_tool_parser.py (llama3_json), SGLang llama32_detector.py"
    check_titles = {  # noqa: RUF012
        "closed": "the JSON object is complete",
        "shape": 'an object with exactly "name" and "parameters" (or "arguments")',
    }

    def tool_spans(self, text: str, tools: list[dict]) -> list[tuple[str, int, int]]:
        found, cursor = [], 0
        for tool in tools:
            body = json.dumps(tool, ensure_ascii=False, indent=4)
            start = text.find(body, cursor)
            if start >= 0:
                found.append((tool.get("function", {}).get("name", "?"), start, start + len(body)))
                cursor = start + len(body)
        return found

    name_prefix = '{"name": "'

    def call_tag(self, name: str) -> tuple[str, str]:
        return '{"name": "' + name + '", "parameters": ', "}"

    def write_call(self, name: str, arguments: dict) -> str:
        # the template's own words for an assistant's call
        return '{"name": "' + name + '", "parameters": ' + json.dumps(arguments, ensure_ascii=False) + "}"

    def parse(self, text: str, tools: list[dict], policy: str = "per-block", recover_bare: bool = False) -> ParseResult:
        if policy == "server":
            return self.parse_server(text, tools)
        known = known_tools(tools)
        body = text.strip()
        offset = len(text) - len(text.lstrip())
        if body.startswith(PYTHON_TAG):
            offset += len(PYTHON_TAG)
            body = body[len(PYTHON_TAG) :].lstrip()
        if not body.startswith("{"):
            return result_of(self.name, [], text)
        blocks: list[Block] = []
        cursor = 0
        while cursor < len(body) and len(blocks) < MAX_CALLS:
            end = find_json_end(body, cursor)
            piece = body[cursor:end]
            checks = [Check("closed", True)]
            value, error = parse_json_text(piece, checks, EMPTY, NOT_JSON)
            if error:
                blocks.append(
                    Block(
                        len(blocks),
                        piece,
                        offset + cursor,
                        offset + end,
                        pad_checks(checks, NATIVE_CHECKS),
                        None,
                        error,
                    )
                )
                break
            blocks.append(
                check_object_call(
                    len(blocks),
                    value,
                    piece,
                    offset + cursor,
                    offset + end,
                    known,
                    "parameters" if isinstance(value, dict) and "parameters" in value else "arguments",
                    BAD_SHAPE,
                )
            )
            if not body[end:].strip():
                break
            rest = SEPARATOR.match(body, end)
            if rest is None or ";" not in body[end : rest.end()]:
                # something after the call that is neither "; " and another call nor the end
                checks = [Check("closed", True), Check("json", False, NOT_JSON)]
                blocks.append(
                    Block(
                        len(blocks),
                        body[end:],
                        offset + end,
                        offset + len(body),
                        pad_checks(checks, NATIVE_CHECKS),
                        None,
                        NOT_JSON,
                    )
                )
                break
            cursor = rest.end()
        return result_of(self.name, blocks)

    def parse_server(self, text: str, tools: list[dict]) -> ParseResult:
        """Every JSON object (or list of them) naming a tool with its "parameters" or "arguments", anywhere
        in the reply after a `<|python_tag|>` if there is one; the rest of the reply is text."""
        known = known_tools(tools)
        tag = text.find(PYTHON_TAG)
        cursor = tag + len(PYTHON_TAG) if tag >= 0 else 0
        # where each bracket's value ends, found once for the whole reply (a decoder tried at every bracket
        # was quadratic); Python's decoder then reads each value found
        starts = JsonStarts(text)
        decoder = json.JSONDecoder()
        blocks: list[Block] = []
        while len(blocks) < MAX_CALLS:
            found = OPENING.search(text, cursor)
            if found is None:
                break
            at = found.start()
            end = starts.end_of(at)
            try:
                value = decoder.raw_decode(text[at:end])[0] if end != FAILED else None
            except (ValueError, RecursionError):
                end = FAILED
            if end == FAILED:
                cursor = at + 1  # not JSON from here: text, as the servers leave it
                continue
            items = value if isinstance(value, list) else [value]
            if not items or not all(
                isinstance(v, dict) and "name" in v and ({"parameters", "arguments"} & set(v)) for v in items
            ):
                cursor = end  # JSON that is not a call (an example, an answer's data) stays text
                continue
            for item in items[: MAX_CALLS - len(blocks)]:
                key = "parameters" if "parameters" in item else "arguments"
                blocks.append(check_object_call(len(blocks), item, text[at:end], at, end, known, key, BAD_SHAPE))
            cursor = end
        return result_of(self.name, blocks, text, "server")


FORMAT = Llama31Format()
