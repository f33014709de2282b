"""What a tool-call style is: the interface every style file implements, and the spans a rendering is made of.

A style is one way of asking a model for tool calls and reading them back: how the request
is written into the prompt, how a call and an answer are written, how a turn is parsed, and
how a tool's result goes back. Each style is one object in one file of this package (like
vLLM's tool parsers, one file per format behind `ToolParserManager.register_module`); the
registry in `engine.core.styles` finds them. Other model families (Llama 3.1, Mistral, gpt-oss,
DeepSeek-V3), each with its own tokenizer and template, are plug-ins of `engine.core.families`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..parse import Block, ParseResult
    from ..tokenizer import QwenTokenizer


@dataclass(frozen=True)
class Span:
    """A labelled stretch of the prompt text."""

    label: str  # "template", "tool count_letter", "user message 1", "generation prompt", ...
    kind: str  # "template" | "tool" | "message" | "generation"
    start: int  # character offsets into Prompt.text
    end: int
    tokens: int = 0
    message_index: int | None = None


class Style:
    """One tool-call style. Subclasses set the fields and implement the methods; nothing here is Qwen-specific."""

    name: str = ""  # the registry key: what Request.style and --style hold
    label: str = ""  # the UI's short name ("Native", "ReAct")
    noun: str = ""  # how a sentence names it ("the native prompt", "the ReAct prompt")
    help: str = ""  # one sentence for the UI: what this style is
    family: str = "qwen3"  # the tokenizer and chat template it is rendered with
    name_marker: str = ""  # the text after which a written call's tool name starts
    parallel: bool = True  # several calls in one reply (False: one call per reply)
    order: int = 100  # where it comes in lists and switches (lower first)
    constrained: bool = False  # engine.constrain's grammar can enforce its calls (it follows Qwen3's <tool_call> blocks)

    def render(self, request, tok: QwenTokenizer) -> tuple[str, list[Span]]:
        """The prompt text of `request` and its labelled spans (token counts filled in by the caller)."""
        raise NotImplementedError

    def write_call(self, name: str, arguments: dict) -> str:
        """One call as the model writes it in this style."""
        raise NotImplementedError

    def write_calls(self, calls: list[tuple[str, dict]]) -> list[str]:
        """The replies that carry these calls: one reply with them all, or one reply per call."""
        if self.parallel:
            return ["\n".join(self.write_call(name, args) for name, args in calls)]
        return [self.write_call(name, args) for name, args in calls]

    def write_answer(self, answer: str) -> str:
        """A final answer (no call) as the model writes it in this style."""
        raise NotImplementedError

    def parse(self, text: str, tools: list[dict], policy: str = "per-block", recover_bare: bool = False) -> ParseResult:
        """The calls and errors of one assistant turn."""
        raise NotImplementedError

    def read_reply(self, text: str) -> str:
        """What the harness reads of a reply (ReAct stops at the model's own Observation:, as a stop word would)."""
        return text

    def result_text(self, result: str) -> str:
        """A tool's result as the model reads it when it is fed back."""
        raise NotImplementedError

    def written_call(self, block: Block, turn: str) -> tuple[str, dict] | None:
        """The name and arguments a block wrote, even where a later check failed; None where it wrote none."""
        raise NotImplementedError


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
