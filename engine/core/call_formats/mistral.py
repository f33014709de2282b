"""Mistral (v0.3 tool format): `[AVAILABLE_TOOLS]` in the prompt, `[TOOL_CALLS]` and a JSON list in the reply.

Rendered by Mistral's own package, mistral-common, with the v3 SentencePiece tokenizer
(assets/mistral-tokenizer, the file mistral-common ships for Mistral-7B-Instruct-v0.3): the
prompt's ids are `encode_chat_completion`'s. A reply is a call when it holds `[TOOL_CALLS]`;
what follows is one JSON list of {"name", "arguments"} objects (each with the 9-character "id"
the v3 format adds), as vLLM's mistral tool parser reads it. That is the strict policy
(per-block): the whole text after `[TOOL_CALLS]` must be the list. Under `server`, text after
the list is left as text (vLLM's mistral_tool_parser.py cuts the list out of the reply), and the
newer layout `[TOOL_CALLS]name{arguments}`, one marker per call, is read as vLLM's
mistral_tool_parser.py reads it for tokenizers from v11 on.
"""

from __future__ import annotations

import functools
import json
import re

from ...settings import ASSETS
from ..parse import NATIVE_CHECKS, Block, Check, ParseResult, pad_checks
from .base import CallFormat, Opener, find_json_end
from .calls import MAX_CALLS, as_text, check_object_call, known_tools, parse_json_text, result_of

TOKENIZER_FILE = ASSETS / "mistral-tokenizer" / "mistral_instruct_tokenizer_240323.model.v3"
TOOL_CALLS = "[TOOL_CALLS]"
EXAMPLE_ID = "a1b2c3d4e"  # v3 calls carry a 9-character id; the model makes one up
NOT_JSON = "error: the text after [TOOL_CALLS] is not valid JSON"
EMPTY = "error: [TOOL_CALLS] is followed by no calls"
NOT_LIST = "error: after [TOOL_CALLS] write a JSON list of calls, [{...}]"
TRAILING = "error: text after the [TOOL_CALLS] list: the format ends the reply with its calls"
BAD_SHAPE = 'error: a tool call must be a JSON object with exactly "name" and "arguments" (and its "id")'
CONTROL = re.compile(r"(\[/?[A-Z_]+\]|</?s>)")


@functools.lru_cache(maxsize=1)
def load_mistral_tokenizer():
    """mistral-common's MistralTokenizer over the vendored v3 file, in the mode that renders a request for serving."""
    from mistral_common.protocol.instruct.validator import ValidationMode
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    return MistralTokenizer.from_file(str(TOKENIZER_FILE), mode=ValidationMode.test)


def to_request(messages: list[dict], tools: list[dict]):
    """An OpenAI-style request as mistral-common's ChatCompletionRequest."""
    from mistral_common.protocol.instruct.request import ChatCompletionRequest

    return ChatCompletionRequest.from_openai(messages=messages, tools=tools or None)


class MistralFormat(CallFormat):
    name = "mistral"
    family = "mistral"
    label = "Mistral"
    maker = "Mistral AI"
    order = 20
    opener = Opener(TOOL_CALLS, "a control token")
    renderer = "mistral-common's encode_chat_completion (v3 tokenizer)"
    parser_reference = "vLLM mistral tool parser"
    policies = ("per-block", "server")
    server_reference = "vLLM mistral_tool_parser.py, SGLang mistral_detector.py"
    special_opener = True
    check_titles = {  # noqa: RUF012
        "closed": "the calls follow [TOOL_CALLS]",
        "json": "valid JSON after [TOOL_CALLS]",
        "shape": 'a list of objects with exactly "name" and "arguments" (and an "id")',
    }

    @property
    def _sp(self):
        return load_mistral_tokenizer().instruct_tokenizer.tokenizer

    @property
    def vocab_size(self) -> int:  # type: ignore[override]
        return self._sp.n_words

    def prompt_ids(self, messages: list[dict], tools: list[dict]) -> list[int]:
        return list(load_mistral_tokenizer().encode_chat_completion(to_request(messages, tools)).tokens)

    @functools.cached_property
    def _controls(self) -> dict[str, int]:
        sp = self._sp
        return {sp.id_to_piece(i): i for i in range(sp.num_special_tokens)}

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for part in CONTROL.split(text):
            if part in self._controls:
                ids.append(self._controls[part])
            elif part:
                # SentencePiece writes the space before a word itself (its dummy prefix): one shown space is that one
                ids.extend(self._sp.encode(part[1:] if part.startswith(" ") else part, bos=False, eos=False))
        return ids

    def is_special(self, token_id: int) -> bool:
        return token_id < self._sp.num_special_tokens

    def token_bytes(self, token_id: int) -> bytes:
        piece = self._sp.id_to_piece(token_id)
        if token_id < self._sp.num_special_tokens:
            return piece.encode("utf-8")
        if re.fullmatch(r"<0x[0-9A-F]{2}>", piece):
            return bytes([int(piece[3:5], 16)])
        return piece.replace("▁", " ").encode("utf-8")

    def tool_spans(self, text: str, tools: list[dict]) -> list[tuple[str, int, int]]:
        found, cursor = [], 0
        for tool in tools:
            name = tool.get("function", {}).get("name", "?")
            start = text.find('{"type": "function", "function": {"name": ' + json.dumps(name), cursor)
            if start >= 0:
                end = find_json_end(text, start)
                found.append((name, start, end))
                cursor = end
        return found

    name_prefix = TOOL_CALLS + ' [{"name": "'

    def call_tag(self, name: str) -> tuple[str, str]:
        # the grammar's call ends after its arguments: it leaves out the v3 format's "id"
        return TOOL_CALLS + ' [{"name": "' + name + '", "arguments": ', "}]"

    def write_call(self, name: str, arguments: dict) -> str:
        call = {"name": name, "arguments": arguments, "id": EXAMPLE_ID}
        return f"{TOOL_CALLS} {json.dumps([call], ensure_ascii=False)}"

    def parse(self, text: str, tools: list[dict], policy: str = "per-block", recover_bare: bool = False) -> ParseResult:
        at = text.find(TOOL_CALLS)
        if at < 0:
            return result_of(self.name, [], text, policy)
        if policy == "server":
            return self.parse_server(text, tools, at)
        known = known_tools(tools)
        start = at + len(TOOL_CALLS)
        body = text[start:].replace("</s>", "")
        checks = [Check("closed", True)]
        # the list is read on its own: text after it is its own error, not a reason to refuse the list's calls
        first = len(body) - len(body.lstrip())
        end = find_json_end(body, first) if body[first : first + 1] in ("[", "{") else len(body)
        trailing = body[end:].strip()
        value, error = parse_json_text(body[:end], checks, EMPTY, NOT_JSON)
        if error:
            return result_of(self.name, [Block(0, body, at, len(text), pad_checks(checks, NATIVE_CHECKS), None, error)])
        # a single object is accepted as one call, as vLLM's parser does
        calls = value if isinstance(value, list) else [value] if isinstance(value, dict) else None
        if not calls:
            checks.append(Check("shape", False, NOT_LIST))
            return result_of(
                self.name, [Block(0, body, at, len(text), pad_checks(checks, NATIVE_CHECKS), None, NOT_LIST)]
            )
        blocks = [
            check_object_call(
                i,
                call,
                json.dumps(call, ensure_ascii=False),
                at,
                len(text),
                known,
                "arguments",
                BAD_SHAPE,
                optional=("id",),
            )
            for i, call in enumerate(calls[:MAX_CALLS])
        ]
        if trailing:
            after = [Check("closed", True), Check("json", False, TRAILING)]
            blocks.append(
                Block(len(blocks), trailing, start + end, len(text), pad_checks(after, NATIVE_CHECKS), None, TRAILING)
            )
        return result_of(self.name, blocks)

    def parse_server(self, text: str, tools: list[dict], at: int) -> ParseResult:
        """The list (or one object) right after `[TOOL_CALLS]`, the text after it left as text; or, where no
        JSON follows the marker, the newer layout: `[TOOL_CALLS]name{arguments}` for each call."""
        known = known_tools(tools)
        body = text[at + len(TOOL_CALLS) :].replace("</s>", "")
        first = len(body) - len(body.lstrip())
        decoder = json.JSONDecoder()
        if body[first : first + 1] in ("[", "{"):
            try:
                value, end = decoder.raw_decode(body, first)
            except (ValueError, RecursionError):
                checks = [Check("closed", True), Check("json", False, NOT_JSON)]
                return as_text(
                    self.name,
                    text,
                    [Block(0, body, at, len(text), pad_checks(checks, NATIVE_CHECKS), None, NOT_JSON)],
                    "server",
                )
            calls = value if isinstance(value, list) else [value]
            piece = body[first:end]
            blocks = [
                check_object_call(
                    i, call, piece, at, at + len(TOOL_CALLS) + end, known, "arguments", BAD_SHAPE, optional=("id",)
                )
                for i, call in enumerate(calls[:MAX_CALLS])
            ]
            return result_of(self.name, blocks, text, "server")
        blocks: list[Block] = []
        for piece in text[at:].replace("</s>", "").split(TOOL_CALLS)[1:]:
            if len(blocks) >= MAX_CALLS:
                break
            brace = piece.find("{")
            start = text.find(piece, at)
            if brace < 0:
                checks = [Check("closed", True), Check("json", False, EMPTY)]
                blocks.append(
                    Block(len(blocks), piece, start, start + len(piece), pad_checks(checks, NATIVE_CHECKS), None, EMPTY)
                )
                continue
            try:
                arguments, _ = decoder.raw_decode(piece, brace)
            except (ValueError, RecursionError):
                checks = [Check("closed", True), Check("json", False, NOT_JSON)]
                blocks.append(
                    Block(
                        len(blocks), piece, start, start + len(piece), pad_checks(checks, NATIVE_CHECKS), None, NOT_JSON
                    )
                )
                continue
            call = {"name": piece[:brace].strip(), "arguments": arguments}
            blocks.append(
                check_object_call(len(blocks), call, piece, start, start + len(piece), known, "arguments", BAD_SHAPE)
            )
        return result_of(self.name, blocks, text, "server")


FORMAT = MistralFormat()
