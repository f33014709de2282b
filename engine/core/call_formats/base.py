"""What a call format is: one way a model writes a tool call, and everything the site does with it.

A call format renders a request with its tokenizer and template, writes a call and an answer,
parses a turn under each parsing policy it has, feeds a result back, and says what a grammar
needs: its opener and the tags around a call's arguments. Each format is one object in one file
of this package, found by the registry in `engine.core.call_formats`, beside the others:
Qwen3's native `<tool_call>` JSON, ReAct prose on Qwen3's template, and the formats of other
model families (Llama 3.1, Mistral, gpt-oss, DeepSeek-V3), each with its own tokenizer.

Pages and the command line ask a format's flags (`constrained`, `in_lessons`, `maker_format`,
`special_opener`, `parallel`, `policies`), never its name. Everything a page draws of a
rendering (the prompt's text, its spans, each token's text) is derived from the exact ids the
maker's renderer made, so a count is always the count of those ids.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..control_text import control_pattern, escape_outside_text
from ..parse import CHECK_TITLES
from ..tokenizer import show_token_bytes

if TYPE_CHECKING:
    from ..parse import Block, ParseResult
    from ..tokenizer import QwenTokenizer

SpanKind = Literal["template", "tool", "message", "generation"]


@dataclass(frozen=True)
class Span:
    """A labelled stretch of the prompt text."""

    label: str  # "template", "tool count_letter", "user message 1", "generation prompt", ...
    kind: SpanKind
    start: int  # character offsets into Prompt.text
    end: int
    tokens: int = 0
    message_index: int | None = None


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

    text: str | None  # None: the format has no marker; a call is a bare JSON object
    note: str  # one sentence for the page


class CallFormat:
    """One call format. A format file defines a subclass, sets its fields, implements its methods, and `FORMAT = TheClass()`."""

    # -- who it is ----------------------------------------------------------------------------
    name: str = ""  # the registry key: what --style (a lesson format) or a page's URL holds
    family: str = ""  # the model family whose tokenizer and template it uses: what --family takes
    label: str = ""  # the page's short name ("Native", "ReAct", "Llama 3.1")
    family_label: str = ""  # the family's name on a page ("Qwen3"); the label where empty
    noun: str = ""  # how a sentence names it ("the native prompt", "the ReAct prompt")
    help: str = ""  # one sentence for the page: what this format is
    maker: str = ""
    order: int = 100  # where it comes in lists and switches (lower first)
    renderer: str = ""  # whose code renders the prompt (a package, or the official template via jinja2)
    parser_reference: str = ""  # the vLLM parser the parse follows
    server_reference: str = ""  # the servers' parser files the server policy follows (where it has one)

    # -- its flags: what pages and the command line read instead of names -----------------------
    in_lessons: bool = (
        False  # written with Qwen3's tokenizer and template, with labelled spans: the lessons switch between these
    )
    maker_format: bool = (
        True  # the format the family's maker trained its models on (False: a format only the prompt asks for)
    )
    constrained: bool = (
        False  # engine.constrain's Qwen3 grammar holds its calls (tool_choice auto, required, a named tool)
    )
    tag_grammar: bool = True  # a structural-tag grammar over the family's own vocabulary can hold its calls (call_tag)
    argument_style: str = (
        "json"  # how a call's arguments are written: "json", or "qwen_xml" (one <parameter=NAME> each)
    )
    special_opener: bool = False  # its opener is one special token of the tokenizer
    parallel: bool = True  # several calls in one reply (False: one call per reply)
    policies: tuple[str, ...] = (
        "per-block",
    )  # the parsing policies it has (engine.core.parse.PARSE_POLICIES): strict, server
    opener: Opener = Opener(None, "")
    name_marker: str = ""  # the text after which a written call's tool name starts
    name_prefix: str = ""  # the call's text before the tool's name: where a grammar's choice of tool is made
    check_titles: dict[str, str] = {}  # noqa: RUF012 - its own words for a check where they differ from CHECK_TITLES

    @property
    def display_family(self) -> str:
        return self.family_label or self.label

    def check_title(self, check: str) -> str:
        """A check of its parser in words, as a checks table prints it."""
        return self.check_titles.get(check, CHECK_TITLES[check])

    # -- tokens ------------------------------------------------------------------------------
    vocab_size: int = 0

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

    # -- a lesson's prompt, with its labelled spans (formats with in_lessons) ----------------------
    def render(self, request, tok: QwenTokenizer) -> tuple[str, list[Span]]:
        """The prompt text of `request` and its labelled spans (token counts filled in by the caller)."""
        raise NotImplementedError(f"{self.label} is rendered by its maker's renderer (render_tokens), not in a lesson")

    # -- the grammar -------------------------------------------------------------------------
    def call_tag(self, name: str) -> tuple[str, str]:
        """(begin, end) around one tool's JSON arguments: the structural tag a grammar holds the call to."""
        raise NotImplementedError

    def call_tags(self, name: str) -> list[tuple[str, str]]:
        """Every way the format may write one call (most formats have one)."""
        return [self.call_tag(name)]

    def triggers(self) -> list[str]:
        """The texts a grammar under auto switches on at: each call tag starts with one."""
        return [self.opener.text or self.name_prefix]

    # -- calls, answers and results ----------------------------------------------------------------
    def write_call(self, name: str, arguments: dict) -> str:
        """The call as this format's model writes it (the turn's text, from its first token)."""
        raise NotImplementedError

    def write_answer(self, answer: str) -> str:
        """A final answer (no call) as the model writes it in this format."""
        return answer

    def parse(self, text: str, tools: list[dict], policy: str = "per-block", recover_bare: bool = False) -> ParseResult:
        """The calls and errors of one assistant turn, under one of its `policies`."""
        raise NotImplementedError

    def read_reply(self, text: str) -> str:
        """What the harness reads of a reply (ReAct stops at the model's own Observation:, as a stop word would)."""
        return text

    def result_text(self, result: str) -> str:
        """A tool's result as the model reads it when it is fed back."""
        raise NotImplementedError

    def written_call(self, block: Block, turn: str) -> tuple[str, dict] | None:
        """The name and arguments a block wrote, even where a later check failed; None where it wrote none."""
        return None if block.call is None else (block.call.name, block.call.arguments)


def message_spans(
    text: str, cursor: int, messages: list[dict], first: int, spans: list[Span], originals: list[dict] | None = None
) -> int:
    """Append one span per message from `first` on, walking the rendered text from `cursor`.

    `originals` gives the roles for the labels when the rendered messages were rewritten
    (ReAct turns a tool result into a user "Observation:" turn).
    """
    for index in range(first, len(messages)):
        message = messages[index]
        role = message.get("role")
        shown = (originals or messages)[index].get("role")
        label = f"{'tool result' if shown == 'tool' else str(shown) + ' message'} {index}"
        start = cursor
        if role == "tool":
            # consecutive tool results share one user turn, each in its own <tool_response>
            if index == 0 or messages[index - 1].get("role") != "tool":
                cursor += len("<|im_start|>user")
            cursor += len("\n<tool_response>\n" + str(message.get("content", "")) + "\n</tool_response>")
            if index == len(messages) - 1 or messages[index + 1].get("role") != "tool":
                cursor += len("<|im_end|>\n")
        else:
            found = text.find("<|im_end|>\n", cursor)
            cursor = len(text) if found < 0 else found + len("<|im_end|>\n")
        spans.append(Span(label, "message", start, cursor, message_index=index))
    return cursor


def decode_pieces(family: CallFormat, ids: list[int]) -> tuple[str, list[str], list[int]]:
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


def count_spans(spans: list[Span], starts: list[int]) -> tuple[list[Span], list[int]]:
    """Each span with the number of tokens that start inside it (so the counts add up to the prompt's),
    and for each token the index of the span that holds its first character."""
    counts = [0] * len(spans)
    owners: list[int] = []
    which = 0
    for start in starts:
        while which + 1 < len(spans) and start >= spans[which].end:
            which += 1
        owners.append(which)
        if spans:
            counts[which] += 1
    counted = [Span(s.label, s.kind, s.start, s.end, counts[i], s.message_index) for i, s in enumerate(spans)]
    return counted, owners


def find_json_end(text: str, start: int) -> int:
    """Where the JSON value that starts at `start` ends (the end of the text when it does not parse)."""
    import json

    try:
        _, end = json.JSONDecoder().raw_decode(text, start)
        return end
    except (ValueError, RecursionError):
        return len(text)
