"""What a wire format is: the call in no format yet, one format's exchange, and the interface each format file implements.

A format writes one exchange: the request (a prompt's text or an API's request body), the
model's reply or replies, and what goes back after each (the results), plus its words for
`tool_choice` and its answers to the questions of `ASPECTS` (what differs between formats).
Ids are made from the call's index (the same call always gets the same id) and shaped as the
API writes them (`call_…`, `toolu_01…`).
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field

from ...errors import BadInput

NAME = "<tool name>"  # where the named form of tool_choice puts the tool's name

# the questions every format answers, in the order the table of differences asks them
ASPECTS = (
    "where the call is written",
    "arguments",
    "how a result finds its call",
    "the result goes back as",
    "parallel calls",
    "the reply says it called a tool",
    "tool_choice: auto / required / none / one tool",
)


@dataclass(frozen=True)
class WireCall:
    """One call in no format yet: what the model asked for and what came back."""

    name: str
    arguments: dict
    result: str  # the text that goes back to the model
    is_error: bool = False  # the result is an error the harness wrote


@dataclass(frozen=True)
class WireExchange:
    """One format's request, the model's reply(es) and the result(s) sent back."""

    format: str  # a format's key
    title: str
    request: object  # the request body (dict) or the prompt text (str)
    replies: list  # one per model call the calls need: a response body (dict) or the reply text (str)
    results: list  # what goes back after each reply: messages/items (list or dict) or text (str)
    tokens: dict = field(default_factory=dict)  # text formats: Qwen3 token counts of request, replies, results
    ids: list[str] = field(default_factory=list)  # the id that ties each call to its result ([] where order does)


class WireFormat:
    """One wire format. A format file defines a subclass and `FORMAT = TheClass()`; the registry finds it."""

    key: str = ""  # "openai-chat": what write_call and the page call it
    title: str = ""  # the heading: "OpenAI Chat Completions"
    short: str = ""  # its name in tables (defaults to the title)
    tab: str = ""  # its name on a tab (defaults to short)
    order: int = 100  # where it comes among the formats (lower first)
    style: str | None = (
        None  # a text format: the lesson call format (engine.core.call_formats) whose prompt it is; None for an API
    )
    tool_choice: dict | None = (
        None  # its words for "auto", "required", "none", "named" (NAME marks the tool); None: no field
    )
    id_prefix: str | None = None  # the ids it ties results to calls with ("call_"); None: results go by order
    id_length: int = 0  # how many base-62 characters follow the prefix
    differences: dict = {}  # noqa: RUF012 - each subclass sets its own: ASPECTS -> its answer

    @property
    def is_text(self) -> bool:
        """A prompt the model reads (and the reply it writes), rather than an API's JSON body."""
        return self.style is not None

    def write(
        self,
        calls: list[WireCall],
        tools: list[dict],
        messages: list[dict],
        choice: str = "auto",
        answer: str | None = None,
    ) -> WireExchange:
        """This format's exchange for these calls (or, with no calls, for a final `answer`)."""
        raise NotImplementedError

    def call_id(self, index: int) -> str:
        """The id of call `index` as this format writes it."""
        if self.id_prefix is None:
            raise BadInput(f"{self.key} matches results to calls by order, not by id")
        return make_id(self.id_prefix, index, self.id_length)

    def tool_choice_for(self, choice: str = "auto") -> object:
        """Our tool_choice (auto, required, none, or a tool's name) in this format's words."""
        if self.tool_choice is None:
            raise BadInput(f"{self.key} has no tool_choice field")
        if choice in ("auto", "required", "none"):
            return copy.deepcopy(self.tool_choice[choice])
        return _put_name(copy.deepcopy(self.tool_choice["named"]), choice)


def _put_name(value: object, name: str) -> object:
    """The named form with NAME replaced by the tool's name, wherever the format nests it."""
    if value == NAME:
        return name
    if isinstance(value, dict):
        return {k: _put_name(v, name) for k, v in value.items()}
    return value


def make_id(prefix: str, index: int, length: int) -> str:
    """A stable id for the call at `index`, in base 62 like the APIs' own ids."""
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    number = int.from_bytes(hashlib.sha256(f"{prefix}{index}".encode()).digest(), "big")
    digits = []
    for _ in range(length):
        number, digit = divmod(number, 62)
        digits.append(alphabet[digit])
    return prefix + "".join(digits)


def function_of(tool: dict) -> dict:
    """A tool definition's function part, with every field an API needs."""
    fn = tool.get("function", tool) if isinstance(tool, dict) else {}
    return {
        "name": str(fn.get("name", "")),
        "description": str(fn.get("description", "")),
        "parameters": fn.get("parameters") or {"type": "object", "properties": {}},
    }


def split_system(messages: list[dict]) -> tuple[str | None, list[dict]]:
    """The system text (None without one) and the other messages: the APIs that take it as a field."""
    if messages and messages[0].get("role") == "system":
        return str(messages[0].get("content", "")), messages[1:]
    return None, messages


def check_exchange(calls: list[WireCall], messages: list[dict], answer: str | None = None) -> None:
    """Refuse what no format can write: nothing to write, calls and an answer at once, tool messages in the request."""
    if not calls and answer is None:
        raise BadInput("give at least one call, or an answer, to write out")
    if calls and answer is not None:
        raise BadInput("write either calls or a final answer: a reply with calls waits for their results")
    for message in messages:
        if message.get("role") not in ("system", "user", "assistant"):
            raise BadInput("the request's messages must be system, user or assistant text; calls come separately")
