"""Qwen3: the site's own family, rendered by the native style (Qwen3's template, byte for byte).

The call is `<tool_call>` JSON, parsed by `engine.core.parse.parse_native` (vLLM's hermes/Qwen
parser regex and BFCL's checks); this file only puts Qwen3 beside the other families.
"""

from __future__ import annotations

import json

from ..parse import ParseResult, parse_native
from ..prompt import Request, render
from ..styles import get_style
from ..tokenizer import END_OF_TEXT, load_tokenizer
from .base import Family, Opener


class Qwen3Family(Family):
    name = "qwen3"
    label = "Qwen3"
    maker = "Alibaba Qwen"
    order = 0
    opener = Opener("<tool_call>", "a special token")
    renderer = "Qwen3's chat template (assets/qwen3-tokenizer) via transformers' Jinja renderer"
    parser_reference = "vLLM hermes / qwen3 tool parser"

    @property
    def vocab_size(self) -> int:  # type: ignore[override]
        return load_tokenizer().vocab_size

    def control_texts(self) -> list[str]:
        return load_tokenizer().control_texts()

    def prompt_ids(self, messages: list[dict], tools: list[dict]) -> list[int]:
        return render(Request(messages, tools, "native")).ids  # render escapes the text from outside

    def encode(self, text: str) -> list[int]:
        return load_tokenizer().encode(text)

    def is_special(self, token_id: int) -> bool:
        # every added token (<tool_call> included, which Qwen3 does not flag special) is one id text never splits into
        return token_id >= END_OF_TEXT

    def token_bytes(self, token_id: int) -> bytes:
        return load_tokenizer().token_bytes(token_id)

    def tool_spans(self, text: str, tools: list[dict]) -> list[tuple[str, int, int]]:
        # the template writes one line per tool inside <tools>: the native style's tool spans
        found, cursor = [], max(text.find("<tools>"), 0)
        for tool in tools:
            line = "\n" + json.dumps(tool, ensure_ascii=False)
            start = text.find(line, cursor)
            if start < 0:
                continue
            found.append((tool.get("function", {}).get("name", "?"), start, start + len(line)))
            cursor = start + len(line)
        return found

    name_prefix = '<tool_call>\n{"name": "'

    def write_call(self, name: str, arguments: dict) -> str:
        return get_style("native").write_call(name, arguments)

    def parse(self, text: str, tools: list[dict]) -> ParseResult:
        return parse_native(text, tools)


FAMILY = Qwen3Family()
