"""Control tokens in text from outside, escaped: what a visitor pastes never becomes a control-token id.

A tokenizer turns the text of each of its added tokens ("<|im_end|>", "<tool_call>", Llama 3.1's
"<|eot_id|>" and "<|python_tag|>", DeepSeek-V3's "<｜tool▁calls▁begin｜>") into that token's single
id wherever the text holds it: inside a user's message or a tool's description too, where the model
then reads it as the template's own marker (a turn that ends, a call that starts). mistral-common
and harmony encode a message's text as text; the families that render a template and tokenize the
result in one pass (Qwen3, Llama 3.1, DeepSeek-V3) escape the text from outside first: the user's
and system messages, and every string and key of the tools. A marker's first character is written
as an HTML entity ("<" as "&lt;"), as the harness writes markers in tool results, which it escapes
where it makes them (engine.harness.tools.run_tool; its own error messages may name a marker on
purpose); the assistant's messages are the model's own. Escaping twice changes nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable


@functools.lru_cache(maxsize=16)
def _pattern(texts: tuple[str, ...]) -> re.Pattern | None:
    # the longest first, so that a marker inside a longer one is not matched on its own
    ordered = sorted({t for t in texts if t}, key=len, reverse=True)
    return re.compile("|".join(re.escape(t) for t in ordered)) if ordered else None


def control_pattern(texts: Iterable[str]) -> re.Pattern | None:
    """One regular expression for a tokenizer's added tokens (None: it has none)."""
    return _pattern(tuple(texts))


def _entity(character: str) -> str:
    return "&lt;" if character == "<" else f"&#{ord(character)};"


def escape_text(text: str, pattern: re.Pattern | None) -> str:
    """`text` with each control token's first character written as an entity."""
    if pattern is None or not isinstance(text, str):
        return text
    return pattern.sub(lambda found: _entity(found.group()[0]) + found.group()[1:], text)


def escape_value(value, pattern: re.Pattern | None):
    """A JSON value with every string in it escaped, object keys included."""
    if isinstance(value, str):
        return escape_text(value, pattern)
    if isinstance(value, dict):
        return {escape_text(k, pattern): escape_value(v, pattern) for k, v in value.items()}
    if isinstance(value, list):
        return [escape_value(v, pattern) for v in value]
    return value


# messages whose text is not from outside: the model's own, and tool results (escaped where they are made)
OWN_ROLES = frozenset(("assistant", "tool"))


def escape_outside_text(messages: list, tools: list, pattern: re.Pattern | None) -> tuple[list, list]:
    """The messages (the user's and system ones) and the tools, escaped."""
    if pattern is None:
        return messages, tools
    shown = [
        m
        if not isinstance(m, dict) or m.get("role") in OWN_ROLES
        else {k: (v if k == "role" else escape_value(v, pattern)) for k, v in m.items()}
        for m in messages
    ]
    return shown, escape_value(tools, pattern)
