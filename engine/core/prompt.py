"""Render a request as the model sees it, in its style, with labelled spans and their token counts.

The request's call format (`engine.core.call_formats`, one with `in_lessons`: native is the
tokenizer's own Qwen3 chat template, byte for byte; ReAct is our Thought / Action / Observation
prose inside the same template) writes the text and marks its spans; this module counts each
span's tokens with the one tokenizer.

Every token of the prompt belongs to exactly one span (the span holding its first
character), so the spans' token counts add up to the prompt's count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import BadInput
from .call_formats import Span, count_spans, get_format
from .control_text import control_pattern, escape_outside_text
from .tokenizer import QwenTokenizer, TokenPiece, load_tokenizer


@dataclass
class Request:
    """What a harness sends for one model call."""

    messages: list[dict]
    tools: list[dict] = field(default_factory=list)
    style: str = "native"  # a lesson call format's name (engine.core.call_formats): "native" (Qwen's <tool_call> template) or "react"
    enable_thinking: bool = False
    add_generation_prompt: bool = True


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: its text, its tokens, and which span each token belongs to."""

    style: str
    text: str
    ids: list[int]
    pieces: list[TokenPiece]
    spans: list[Span]
    token_spans: list[int]  # for each token, the index of its span

    @property
    def count(self) -> int:
        return len(self.ids)

    def span_text(self, span: Span) -> str:
        return self.text[span.start : span.end]

    def conversation_spans(self) -> list[Span]:
        """The spans from the first message after the system turn on: the conversation, without the tool definitions."""
        first = next(i for i, s in enumerate(self.spans) if s.kind == "message" and s.label != "system message 0")
        return self.spans[first:]

    def message_spans(self, indices) -> list[Span]:
        """The spans that render the messages at `indices` (their place in the request's messages)."""
        wanted = set(indices)
        return [s for s in self.spans if s.kind == "message" and s.message_index in wanted]

    def message_tokens(self, indices) -> int:
        """How many of this prompt's tokens the messages at `indices` take."""
        return sum(s.tokens for s in self.message_spans(indices))

    def message_text(self, indices) -> str:
        """The exact text the messages at `indices` add to this prompt, template markers included."""
        return "".join(self.span_text(s) for s in self.message_spans(indices))


# -- rendering ----------------------------------------------------------------------------
def render(request: Request, tokenizer: QwenTokenizer | None = None) -> Prompt:
    """The prompt of one model call, as text, token ids and labelled spans.

    Control tokens in the text from outside (the user's and system messages, the tools) are escaped
    first (engine.core.control_text): a pasted "<|im_end|>" is text, never the template's marker."""
    style = get_format(request.style)
    if not style.in_lessons:
        raise BadInput(
            f"{style.label} is drawn with its maker's renderer (render_tokens); a lesson's prompt is native or ReAct"
        )
    tok = tokenizer or load_tokenizer()
    messages, tools = escape_outside_text(request.messages, request.tools, control_pattern(tok.control_texts()))
    request = Request(messages, tools, request.style, request.enable_thinking, request.add_generation_prompt)
    text, spans = style.render(request, tok)
    return _count_spans(request.style, text, spans, tok)


def _count_spans(style: str, text: str, spans: list[Span], tok: QwenTokenizer) -> Prompt:
    pieces = tok.encode_and_show_work(text)
    counted, owners = count_spans(spans, [p.start for p in pieces])
    return Prompt(style, text, [p.id for p in pieces], pieces, counted, owners)


# -- a turn begun for the model -----------------------------------------------------------------
MAX_PREFIX_CHARS = 4_000  # a turn's opening words (a call begun, a sentence), not a document
# the template's turn markers: a prefix that holds one would end the turn, or start another, before the model writes
TURN_MARKERS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")


def check_prefix(prefix: str) -> None:
    """BadInput for a prefix over MAX_PREFIX_CHARS, one that is not text, or one that holds a turn marker (the
    tokenizer reads each marker's text as its one id wherever it stands, so the text tells)."""
    if len(prefix) > MAX_PREFIX_CHARS:
        raise BadInput(
            f"the prefix is {len(prefix):,} characters; a turn is begun with at most {MAX_PREFIX_CHARS:,}: "
            "give its opening words"
        )
    try:
        prefix.encode("utf-8")
    except UnicodeEncodeError as error:  # a byte that was not UTF-8 on the command line arrives as a lone surrogate
        raise BadInput(
            f"the prefix holds {error.object[error.start]!r} at character {error.start + 1:,}, which is not text: "
            "give it as UTF-8"
        ) from None
    found = next((marker for marker in TURN_MARKERS if marker in prefix), None)
    if found is not None:
        raise BadInput(
            f"the prefix holds {found}, a turn marker of the template: a prefix is the start of the assistant's turn, "
            "so leave the marker out"
        )


def with_prefix(prompt: Prompt, prefix: str, tokenizer: QwenTokenizer | None = None) -> Prompt:
    """`prompt` with the assistant's turn begun: the prefix's ids after the generation prompt, as one more span.

    The prefix is tokenized on its own, as the model would have written it after the header; the model
    then continues from its last token."""
    check_prefix(prefix)
    tok = tokenizer or load_tokenizer()
    offset = len(prompt.text)
    pieces = [
        TokenPiece(p.id, p.text, p.start + offset, p.end + offset, p.special) for p in tok.encode_and_show_work(prefix)
    ]
    ids = [p.id for p in pieces]
    if not ids:
        return prompt
    span = Span("assistant prefix", "generation", offset, offset + len(prefix), len(ids))
    return Prompt(
        prompt.style,
        prompt.text + prefix,
        [*prompt.ids, *ids],
        [*prompt.pieces, *pieces],
        [*prompt.spans, span],
        [*prompt.token_spans, *[len(prompt.spans)] * len(ids)],
    )


def count_tools_tokens(request: Request, tokenizer: QwenTokenizer | None = None) -> int:
    """Prompt tokens with the tools minus the same prompt without them."""
    tok = tokenizer or load_tokenizer()
    bare = Request(request.messages, [], request.style, request.enable_thinking, request.add_generation_prompt)
    return render(request, tok).count - render(bare, tok).count
