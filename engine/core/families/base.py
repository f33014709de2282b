"""What a model family is: its tokenizer, its prompt renderer, how it writes and reads a call, its opener.

Every family is one object in one file of this package, found by the registry in
`engine.core.families` as the styles are (`engine.core.plugins`). A family renders a request
with its maker's own template or package and returns the exact token ids; everything a page
draws (the prompt's text, its spans, each token's text) is derived here from those ids, so a
count is always the count of the ids the reference renderer made.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from ..control_text import control_pattern, escape_outside_text
from ..parse import ParseResult
from ..styles.base import Span
from ..tokenizer import show_token_bytes


@dataclass(frozen=True)
class Rendering:
    """A prompt as one family's renderer made it: its ids, each token's text, and labelled spans."""

    family: str
    text: str  # the prompt's text, decoded from the ids (special tokens written out)
    ids: list[int]
    tokens: list[str]  # each token on its own, as a chip shows it
    starts: list[int]  # where each token starts in `text`
    spans: list[Span]  # "template" and "tool NAME" stretches, with their token counts

    @property
    def count(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class ToolsPrice:
    """What the tools add to one prompt, split as the calculator splits Qwen's."""

    family: str
    total: int  # prompt tokens with the tools minus the same prompt without them
    definitions: int  # tokens inside the tools' own definitions (the tool spans)
    instructions: int  # the rest: the template's framing and instructions that come with tools


@dataclass(frozen=True)
class Opener:
    """What a reply starts with when it is a call: the trigger a grammar switches on under auto."""

    text: str | None  # None: the family has no marker; a call is a bare JSON object
    note: str  # one sentence for the page


class Family:
    """One model family. Subclasses set the fields and implement the methods."""

    name: str = ""  # the registry key: what --family takes
    label: str = ""  # the page's short name
    maker: str = ""
    order: int = 100
    opener: Opener = Opener(None, "")
    renderer: str = ""  # whose code renders the prompt (a package, or the official template via jinja2)
    parser_reference: str = ""  # the vLLM parser the parse follows
    vocab_size: int = 0

    # -- tokens -------------------------------------------------------------------------
    def prompt_ids(self, messages: list[dict], tools: list[dict]) -> list[int]:
        """The exact token ids of the prompt, as the family's own renderer makes them."""
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        """The ids of a piece of turn text (special tokens written in it are single ids)."""
        raise NotImplementedError

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes one token stands for (a special token: its name)."""
        raise NotImplementedError

    def is_special(self, token_id: int) -> bool:
        """Whether the id is a special token (a single id plain text never produces)."""
        raise NotImplementedError

    def control_texts(self) -> list[str]:
        """Texts the tokenizer turns into one control id wherever they appear, so text from outside is escaped
        before it is rendered; none where the maker's renderer encodes a message's text as text."""
        return []

    def escape_outside_text(self, messages: list[dict], tools: list[dict]) -> tuple[list[dict], list[dict]]:
        """The user's and system messages and the tools with this family's control tokens escaped."""
        return escape_outside_text(messages, tools, control_pattern(self.control_texts()))

    def token_text(self, token_id: int) -> str:
        """One token shown on its own: its text, or <0xNN> for the bytes of a character it splits."""
        return show_token_bytes(self.token_bytes(token_id))

    def tool_spans(self, text: str, tools: list[dict]) -> list[tuple[str, int, int]]:
        """(tool name, start, end) of each tool's definition in the rendered text, in order."""
        raise NotImplementedError

    def vocab_bytes(self) -> list[bytes]:
        """Every id's bytes, in id order (what a grammar engine's vocabulary is built from; b"" for an unused id)."""
        out = []
        for token_id in range(self.vocab_size):
            try:
                out.append(self.token_bytes(token_id))
            except (KeyError, ValueError, Exception):  # an id with no token (a reserved slot)
                out.append(b"")
        return out

    # -- the grammar --------------------------------------------------------------------
    name_prefix: str = ""  # the call's text before the tool's name: where a grammar's choice of tool is made

    def call_tag(self, name: str) -> tuple[str, str]:
        """(begin, end) around one tool's JSON arguments: the structural tag a grammar holds the call to."""
        raise NotImplementedError

    def call_tags(self, name: str) -> list[tuple[str, str]]:
        """Every way the format may write one call (most formats have one)."""
        return [self.call_tag(name)]

    def triggers(self) -> list[str]:
        """The texts a grammar under auto switches on at: each call tag starts with one."""
        return [self.opener.text or self.name_prefix]

    # -- calls --------------------------------------------------------------------------
    def write_call(self, name: str, arguments: dict) -> str:
        """The call as this family's model writes it (the turn's text, from its first token)."""
        raise NotImplementedError

    def parse(self, text: str, tools: list[dict]) -> ParseResult:
        """The calls and errors of one assistant turn in this family's format."""
        raise NotImplementedError


def decode_pieces(family: Family, ids: list[int]) -> tuple[str, list[str], list[int]]:
    """(text, token texts, token starts) of a list of ids: bytes fed to one incremental UTF-8 decoder,
    so a character split over two tokens is whole in the text and starts at its first token."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    out: list[str] = []
    starts: list[int] = []
    length = 0
    for token_id in ids:
        starts.append(length)
        piece = decoder.decode(family.token_bytes(token_id))
        out.append(piece)
        length += len(piece)
    tail = decoder.decode(b"", final=True)
    out.append(tail)
    return "".join(out), [family.token_text(i) for i in ids], starts


def label_spans(text: str, tool_spans: list[tuple[str, int, int]]) -> list[Span]:
    """The text cut into "template" stretches and one span per tool definition."""
    spans: list[Span] = []
    cursor = 0
    for name, start, end in tool_spans:
        if start > cursor:
            spans.append(Span("template", "template", cursor, start))
        spans.append(Span(f"tool {name}", "tool", start, end))
        cursor = end
    if cursor < len(text):
        spans.append(Span("template", "template", cursor, len(text)))
    return spans


def count_spans(spans: list[Span], starts: list[int]) -> list[Span]:
    """Each span with the number of tokens that start inside it (so the counts add up to the prompt's)."""
    counts = [0] * len(spans)
    which = 0
    for start in starts:
        while which + 1 < len(spans) and start >= spans[which].end:
            which += 1
        if spans:
            counts[which] += 1
    return [Span(s.label, s.kind, s.start, s.end, counts[i], s.message_index) for i, s in enumerate(spans)]


def find_json_end(text: str, start: int) -> int:
    """Where the JSON value that starts at `start` ends (the end of the text when it does not parse)."""
    import json

    try:
        _, end = json.JSONDecoder().raw_decode(text, start)
        return end
    except (ValueError, RecursionError):
        return len(text)
