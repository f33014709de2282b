"""A check a harness can make beyond the schema: which of a call's string values the model was never shown.

A schema says `word` is a string, not which string. When a model asked "How many s in mississippi?"
calls `count_letter(word="misscancer")`, every schema check passes and the tool runs; only a
check against the conversation sees that "misscancer" appears nowhere in what the model read
before it wrote the call (the user's and system's messages and the tools' results, ignoring
case). The check flags a value that was not copied; it cannot tell whether a value that was
copied is the right one, or whether a value the model worked out itself is right.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

# the roles whose words a value can be copied from: the model's own earlier turns ground nothing
SHOWN_ROLES = ("system", "user", "tool")
# values checked: a word, a name, a path, one line at most; a file's new content (write_file's `content`) is the
# model's to write, copied from nowhere
MAX_CHECKED_CHARS = 80
WRITTEN_ARGUMENTS = frozenset({"content"})


@dataclass(frozen=True)
class UnseenValue:
    """A string argument of a call that ran, found nowhere in what the model had been shown."""

    tool: str
    argument: str
    value: str


def shown_text(messages: list[dict]) -> str:
    """What the model was shown before a call, case-folded: the contents of every system, user and tool message."""
    parts = []
    for message in messages:
        if message.get("role") in SHOWN_ROLES:
            content = message.get("content")
            parts.append(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False))
    return "\n".join(parts).casefold()


def unseen_values(call, messages: list[dict]) -> list[UnseenValue]:
    """The one-line string values of `call`'s runs (a harness ModelCall) that appear nowhere in the messages before its turn."""
    shown = shown_text(messages[: call.message_index])
    found = []
    for result in call.results:
        if not result.ok or not isinstance(result.arguments, dict):
            continue
        for name, value in result.arguments.items():
            if name in WRITTEN_ARGUMENTS or not isinstance(value, str):
                continue
            if "\n" in value.strip() or len(value) > MAX_CHECKED_CHARS:
                continue
            if value.strip() and value.strip().casefold() not in shown:
                found.append(UnseenValue(result.name or "", name, value))
    return found
