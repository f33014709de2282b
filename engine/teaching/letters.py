"""What a token holds, in letters: lesson 1 writes under each token of a word how many letters it carries, so that
a reader sees the model gets pieces, not letters. A byte token's label (<0x8D>) is not letters: only the characters
a token really holds are counted, and its bytes of a split character are named as such."""

from __future__ import annotations

import re

BYTE_LABEL = re.compile(r"<0x[0-9A-F]{2}>")  # how the tokenizer shows one byte of a character split across tokens


def letters_hidden(token_text: str) -> str:
    """ "3 letters", or "1 letter + 2 bytes of a character": what a token of this text holds."""
    n = sum(ch.isalpha() for ch in BYTE_LABEL.sub("", token_text))
    parts = len(BYTE_LABEL.findall(token_text))
    return f"{n} letter{'s' if n != 1 else ''}" + (
        f" + {parts} byte{'s' if parts != 1 else ''} of a character" if parts else ""
    )
