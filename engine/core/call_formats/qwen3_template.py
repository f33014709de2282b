"""What the formats written in Qwen3's template share: Qwen3's tokenizer, its chat template, spans from the lesson renderer.

Native `<tool_call>` JSON and ReAct prose are both rendered in Qwen3's template by the one
tokenizer, so both are counted alike; their prompt ids and tool spans come from their own
`render` (engine.core.prompt), the renderer every lesson uses.
"""

from __future__ import annotations

from ..tokenizer import END_OF_TEXT, load_tokenizer
from .base import CallFormat


class Qwen3Template(CallFormat):
    """A call format on Qwen3's tokenizer and chat template (a base for format files; it registers nothing itself)."""

    family = "qwen3"
    family_label = "Qwen3"
    maker = "Alibaba Qwen"
    in_lessons = True
    renderer = "Qwen3's chat template (assets/qwen3-tokenizer) via transformers' Jinja renderer"

    @property
    def vocab_size(self) -> int:  # type: ignore[override]
        return load_tokenizer().vocab_size

    def control_texts(self) -> list[str]:
        return load_tokenizer().control_texts()

    def _rendered(self, messages: list[dict], tools: list[dict]):
        from ..prompt import Request, render

        return render(Request(messages, tools, self.name))  # render escapes the text from outside

    def prompt_ids(self, messages: list[dict], tools: list[dict]) -> list[int]:
        return self._rendered(messages, tools).ids

    def encode(self, text: str) -> list[int]:
        return load_tokenizer().encode(text)

    def is_special(self, token_id: int) -> bool:
        # every added token (<tool_call> included, which Qwen3 does not flag special) is one id text never splits into
        return token_id >= END_OF_TEXT

    def token_bytes(self, token_id: int) -> bytes:
        return load_tokenizer().token_bytes(token_id)

    def tool_spans(self, text: str, tools: list[dict]) -> list[tuple[str, int, int]]:
        # the lesson renderer's own tool spans, found again in `text` (the same prompt, escaped alike)
        found, cursor = [], 0
        rendered = self._rendered([{"role": "user", "content": ""}], tools)
        for span in rendered.spans:
            if span.kind != "tool":
                continue
            piece = rendered.span_text(span)
            start = text.find(piece, cursor)
            if start >= 0:
                found.append((span.label.removeprefix("tool "), start, start + len(piece)))
                cursor = start + len(piece)
        return found
