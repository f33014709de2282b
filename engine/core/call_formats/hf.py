"""A call format whose tokenizer is a Hugging Face tokenizer.json and whose prompt is its maker's Jinja template.

The template renders in the jinja2 sandbox transformers' `apply_chat_template` uses (engine/core/chat_render.py,
checked against transformers' own `render_jinja_template`), and the text is encoded with the Rust `tokenizers` library, so a count equals
`AutoTokenizer.apply_chat_template(..., tokenize=True)` (tests check it). No torch.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from ..chat_render import render_template
from ..tokenizer import piece_bytes
from .base import CallFormat


class TemplateFormat(CallFormat):
    """Tokenizer files and a chat template in one vendored folder."""

    folder: Path = Path()
    template_file: str | None = None  # a chat_template.jinja beside the tokenizer files; None: tokenizer_config's

    @functools.cached_property
    def _tok(self):
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(self.folder / "tokenizer.json"))

    @functools.cached_property
    def _config(self) -> dict:
        return json.loads((self.folder / "tokenizer_config.json").read_text(encoding="utf-8"))

    @functools.cached_property
    def chat_template(self) -> str:
        if self.template_file:
            return (self.folder / self.template_file).read_text(encoding="utf-8")
        return self._config["chat_template"]

    @functools.cached_property
    def _special(self) -> set[int]:
        return {int(i) for i, t in self._tok.get_added_tokens_decoder().items()}

    @property
    def vocab_size(self) -> int:  # type: ignore[override]
        return self._tok.get_vocab_size(with_added_tokens=True)

    def _token_name(self, key: str) -> str:
        value = self._config.get(key)
        return value.get("content", "") if isinstance(value, dict) else (value or "")

    def template_messages(self, messages: list[dict], tools: list[dict]) -> tuple[list[dict], list[dict] | None]:
        """What goes into the template: the messages and tools as given (a family may rewrite them)."""
        return messages, tools or None

    def render_text(self, messages: list[dict], tools: list[dict]) -> str:
        shown, given = self.template_messages(messages, tools)
        return render_template(
            self.chat_template,
            shown,
            given,
            add_generation_prompt=True,
            bos_token=self._token_name("bos_token"),
            eos_token=self._token_name("eos_token"),
        )

    @functools.cached_property
    def _control_texts(self) -> tuple[str, ...]:
        return tuple(t.content for t in self._tok.get_added_tokens_decoder().values())

    def control_texts(self) -> list[str]:
        return list(self._control_texts)

    def prompt_ids(self, messages: list[dict], tools: list[dict]) -> list[int]:
        # one pass of the tokenizer over the whole text: a control token pasted in a message would be one id
        return self.encode(self.render_text(*self.escape_outside_text(messages, tools)))

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids

    def is_special(self, token_id: int) -> bool:
        return token_id in self._special

    def token_bytes(self, token_id: int) -> bytes:
        return piece_bytes(self._tok.id_to_token(token_id), token_id in self._special)
