"""gpt-oss: OpenAI's harmony format, rendered by OpenAI's own package, openai-harmony.

The prompt is `render_conversation_for_completion` of a system message, a developer message that
declares the tools (harmony writes them as a TypeScript-like `namespace functions { ... }`),
and the conversation. The encoding is o200k_base plus harmony's special tokens; harmony loads
o200k_base from TIKTOKEN_ENCODINGS_BASE, which points at the vendored file (no download). A call
is an assistant message on the commentary channel addressed to `functions.NAME`:
`<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{JSON}<|call|>`. The strict
reading (per-block) finds each `to=functions.NAME` and its message in the text; `server` reads the
reply as vLLM's openai_tool_parser.py does, with openai-harmony's own parser over its tokens: a call
cut off before `<|call|>` is handed back as text, not reported, and a reply that is not harmony
messages (text before a header) is one error: the server's request fails.

Harmony's parser takes about 50 µs a token of a header and its encoder is quadratic in a long run
of one character, so a 200,000-character run of `;` or of spaces took tens of seconds. The server
reading therefore hands harmony the reply as `hand_over` makes it, in one pass over its special
tokens: each message as written, but a body longer than STAND_IN_OVER as a short stand-in (harmony
reads a body token by token until <|call|>, <|end|> or <|return|>, whatever its text) that is read
back afterwards; what follows a message where harmony wants <|start|> cut to its first characters
(harmony refuses the first token); and a header never closed by <|message|> left out (harmony keeps
it and shows nothing of it). Those keep harmony's verdict. Two bounds do not: a reply of more than
MAX_MESSAGES messages, or whose headers run past MAX_HEADER_CHARS characters, is one error that
says so (unless harmony refuses what comes before it), where the server would parse on.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass

from ...settings import ASSETS
from ..parse import NATIVE_CHECKS, Block, Check, ParseResult, pad_checks
from .base import CallFormat, Opener
from .calls import MAX_CALLS, as_text, check_named_call, finish_call, known_tools, result_of

ENCODINGS = ASSETS / "openai-encodings"
SPECIAL_FROM = 199998  # o200k_base has 199,998 ranks
# a call's header holds to=functions.NAME; its body runs from <|message|> to <|call|> (or <|end|>).
# Found by plain searches from each recipient on, never one regex over the whole turn, so a long
# run of spaces or a huge body cannot make the search quadratic.
RECIPIENT = re.compile(r"to=functions\.([^\s<]*)")
MESSAGE, CALL, END = "<|message|>", "<|call|>", "<|end|>"
OPENER = " to=functions."  # harmony's own renderer puts the recipient in the header, before the channel
CHANNEL_FIRST = (
    "<|channel|>commentary to=functions."  # the other order harmony allows (xgrammar's harmony tag takes both)
)
STOPS, START = (CALL, END, "<|return|>"), "<|start|>"  # what ends a message's body; what must follow it
SPECIAL = re.compile(r"<\|[a-z0-9_]++\|>")  # the shape of every harmony special token (each checked in its set)
# bounds on what harmony's parser is handed: it takes about 50 µs a token of a header (2 µs of a body), and its
# encoder is quadratic in a long run of one character, so a body is handed as a stand-in and headers are bounded
MAX_MESSAGES = 4 * MAX_CALLS  # messages read in one reply (a reply holds at most MAX_CALLS calls)
MAX_HEADER_CHARS = 8_192  # characters of headers, all together (a header is about 60: recipient, channel, type)
STAND_IN_OVER = 64  # a longer body is handed to harmony as a short stand-in, and read back from the reply
REFUSED_CHARS = 256  # how much of what harmony refuses it is handed (it stops at the first token)
NOT_CLOSED = "error: the call is not closed with <|call|>; was the reply cut off?"
EMPTY = "error: the call's <|message|> is empty"
NOT_JSON = "error: the message to functions.NAME is not valid JSON"
TOO_MANY_MESSAGES = (
    f"error: the reply holds more than {MAX_MESSAGES} harmony messages; at most {MAX_MESSAGES} are read "
    "in one reply: make the other calls in a later turn"
)
TOO_LONG_HEADERS = (
    f"error: the reply's message headers run past {MAX_HEADER_CHARS:,} characters; a header names a recipient, "
    "a channel and a content type before <|message|>: write text only inside a message"
)


@functools.lru_cache(maxsize=1)
def load_harmony():
    """The HARMONY_GPT_OSS encoding, with o200k_base read from assets/openai-encodings."""
    from openai_harmony import HarmonyEncodingName, load_harmony_encoding

    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(ENCODINGS)
    return load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)


def to_conversation(messages: list[dict], tools: list[dict]):
    """The request as harmony messages: system, the developer message with the tools, then the turns."""
    from openai_harmony import Conversation, DeveloperContent, Message, Role, SystemContent, ToolDescription

    turns = [Message.from_role_and_content(Role.SYSTEM, SystemContent.new())]
    instructions = "\n\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    if tools or instructions:
        developer = DeveloperContent.new()
        if instructions:
            developer = developer.with_instructions(instructions)
        if tools:
            developer = developer.with_function_tools(
                [
                    ToolDescription.new(
                        t["function"]["name"],
                        t["function"].get("description", ""),
                        parameters=t["function"].get("parameters"),
                    )
                    for t in tools
                ]
            )
        turns.append(Message.from_role_and_content(Role.DEVELOPER, developer))
    for message in messages:
        role = message.get("role")
        if role == "user":
            turns.append(Message.from_role_and_content(Role.USER, str(message.get("content", ""))))
        elif role == "assistant" and message.get("content"):
            turns.append(Message.from_role_and_content(Role.ASSISTANT, str(message["content"])).with_channel("final"))
    return Conversation.from_messages(turns)


@dataclass(frozen=True)
class HandOver:
    """What harmony's parser is handed of a reply: its text, the bodies stood in for, and a bound it passed."""

    text: str
    stand_ins: dict[str, str]  # stand-in -> the body it stands for
    problem: str | None = None  # the reply passed a bound: it is refused with this error

    def restore(self, body: str) -> str:
        """A body as the reply wrote it (harmony read its stand-in)."""
        return self.stand_ins.get(body, body)


def hand_over(text: str) -> HandOver:
    """The reply as harmony's parser is handed it: the messages harmony would find, in one pass over the
    special tokens, each body longer than STAND_IN_OVER as a stand-in, what follows a refusal cut short,
    and a header never closed left out (harmony shows nothing of it); past MAX_MESSAGES messages or
    MAX_HEADER_CHARS of headers, what came before and the bound it passed."""
    specials = load_harmony().special_tokens_set
    handed: list[str] = []
    stand_ins: dict[str, str] = {}
    state, mark, messages, header_chars = "header", 0, 0, 0
    for found in SPECIAL.finditer(text):
        token = found.group()
        if token not in specials:
            continue
        if state == "header" and token == MESSAGE:
            header_chars += found.start() - mark
            if header_chars > MAX_HEADER_CHARS:
                return HandOver("".join(handed), stand_ins, TOO_LONG_HEADERS)
            handed.append(text[mark : found.end()])
            state, mark = "body", found.end()
        elif state == "body" and token in STOPS:
            handed.append(_stand_in(text[mark : found.start()], stand_ins) + token)
            messages += 1
            if messages > MAX_MESSAGES:
                return HandOver("".join(handed), stand_ins, TOO_MANY_MESSAGES)
            state, mark = "after", found.end()
        elif state == "after":
            if found.start() > mark or token != START:
                # harmony refuses the first token that is not <|start|>: it is handed that much and no more
                handed.append(text[mark : found.end()][:REFUSED_CHARS])
                return HandOver("".join(handed), stand_ins)
            handed.append(token)
            state, mark = "header", found.end()
    if state == "body":
        handed.append(_stand_in(text[mark:], stand_ins))  # a body cut off: harmony's current content
    elif state == "after":
        handed.append(text[mark : mark + REFUSED_CHARS])
    return HandOver("".join(handed), stand_ins)


def _stand_in(body: str, stand_ins: dict[str, str]) -> str:
    """A short text for a long body (harmony reads a body as it comes, whatever its tokens); a short body itself."""
    if len(body) <= STAND_IN_OVER:
        return body
    key = f"\u2060body {len(stand_ins)}\u2060"
    stand_ins[key] = body
    return key


class GptOssFormat(CallFormat):
    name = "gpt-oss"
    family = "gpt-oss"
    label = "gpt-oss"
    maker = "OpenAI"
    order = 30
    opener = Opener(OPENER, "a header naming the tool")  # after the prompt's <|start|>assistant
    renderer = "openai-harmony's render_conversation_for_completion (o200k_harmony)"
    parser_reference = "vLLM openai (harmony) tool parser"
    policies = ("per-block", "server")
    server_reference = "vLLM openai_tool_parser.py (openai-harmony's StreamableParser)"
    check_titles = {  # noqa: RUF012
        "closed": "the message is closed with <|call|>",
        "json": "the message is valid JSON",
        "shape": "the tool is named in the header (to=functions.NAME)",
    }

    @functools.cached_property
    def vocab_size(self) -> int:  # type: ignore[override]
        # o200k_base's ranks, then harmony's special tokens (named and reserved) right after them
        return SPECIAL_FROM + len(load_harmony().special_tokens_set)

    def prompt_ids(self, messages: list[dict], tools: list[dict]) -> list[int]:
        from openai_harmony import Role

        return list(load_harmony().render_conversation_for_completion(to_conversation(messages, tools), Role.ASSISTANT))

    def encode(self, text: str) -> list[int]:
        return list(load_harmony().encode(text, allowed_special="all"))

    @functools.cached_property
    def _ranks(self):
        from ..openai_encodings import load_openai_encoding

        return load_openai_encoding("o200k_base")

    def is_special(self, token_id: int) -> bool:
        return token_id >= SPECIAL_FROM

    def token_bytes(self, token_id: int) -> bytes:
        if token_id >= SPECIAL_FROM:  # harmony's special tokens come after o200k_base's ranks
            return load_harmony().decode([token_id]).encode("utf-8")
        return self._ranks.decode_single_token_bytes(token_id)

    def tool_spans(self, text: str, tools: list[dict]) -> list[tuple[str, int, int]]:
        found, cursor = [], 0
        for tool in tools:
            name = tool.get("function", {}).get("name", "?")
            at = text.find(f"type {name} = ", cursor)
            if at < 0:
                continue
            # the description is the // line just above
            line = text.rfind("\n", 0, at - 1)
            start = line + 1 if text.startswith("//", line + 1) and line >= cursor else at
            end = text.find("=> any;", at)
            end = len(text) if end < 0 else end + len("=> any;")
            found.append((name, start, end))
            cursor = end
        return found

    name_prefix = OPENER

    def call_tag(self, name: str) -> tuple[str, str]:
        return f"{OPENER}{name}<|channel|>commentary <|constrain|>json<|message|>", CALL

    def call_tags(self, name: str) -> list[tuple[str, str]]:
        return [self.call_tag(name), (f"{CHANNEL_FIRST}{name}<|constrain|>json<|message|>", CALL)]

    def triggers(self) -> list[str]:
        return [OPENER, CHANNEL_FIRST]

    def write_call(self, name: str, arguments: dict) -> str:
        # harmony's own rendering of the assistant's call, after the <|start|>assistant the prompt ends with
        from openai_harmony import Message, Role

        message = (
            Message.from_role_and_content(Role.ASSISTANT, json.dumps(arguments, ensure_ascii=False))
            .with_channel("commentary")
            .with_recipient(f"functions.{name}")
            .with_content_type("<|constrain|>json")
        )
        written = load_harmony().decode_utf8(load_harmony().render(message))
        return written.removeprefix("<|start|>assistant")

    def parse(self, text: str, tools: list[dict], policy: str = "per-block", recover_bare: bool = False) -> ParseResult:
        if policy == "server":
            return self.parse_server(text, tools)
        known = known_tools(tools)
        blocks = []
        cursor = 0
        while len(blocks) < MAX_CALLS:
            match = RECIPIENT.search(text, cursor)
            if match is None:
                break
            opened = text.find(MESSAGE, match.end())
            if opened < 0:
                blocks.append(
                    check_named_call(
                        len(blocks),
                        match.group(1),
                        "",
                        match.start(),
                        len(text),
                        known,
                        False,
                        NOT_CLOSED,
                        EMPTY,
                        NOT_JSON,
                    )
                )
                break
            body_start = opened + len(MESSAGE)
            ends = [at for at in (text.find(CALL, body_start), text.find(END, body_start)) if at >= 0]
            close = min(ends) if ends else len(text)
            end = close + (
                len(CALL) if text.startswith(CALL, close) else len(END) if text.startswith(END, close) else 0
            )
            blocks.append(
                check_named_call(
                    len(blocks),
                    match.group(1),
                    text[body_start:close],
                    match.start(),
                    end,
                    known,
                    bool(ends),
                    NOT_CLOSED,
                    EMPTY,
                    NOT_JSON,
                )
            )
            cursor = end
        if not blocks:
            final = text.split("<|message|>")[-1].replace("<|return|>", "").replace("<|end|>", "")
            return result_of(self.name, [], final)
        return result_of(self.name, blocks)

    def parse_server(self, text: str, tools: list[dict]) -> ParseResult:
        """The reply as vLLM's openai_tool_parser.py reads it: openai-harmony's own StreamableParser over its tokens.

        Only whole messages count: a call cut off before <|call|> is no call, and a reply with none is
        handed back as text; a message to functions.NAME is a call, its body JSON unless its content type
        says otherwise; a reply harmony's parser refuses (text before a header) is one error and no call,
        as the server's request fails. What harmony is handed is `hand_over`'s: the same messages, each
        long body as a short stand-in, and nothing past a bound.
        """
        from openai_harmony import Role, StreamableParser

        known = known_tools(tools)
        handed = hand_over(text)
        parser = StreamableParser(load_harmony(), Role.ASSISTANT)
        try:
            for token_id in self.encode(handed.text):
                parser.process(token_id)
        except Exception as error:  # HarmonyError: the tokens are not harmony messages
            return self._refused(text, f"error: harmony's parser refuses the reply: {str(error)[:160]}")
        if handed.problem:
            return self._refused(text, handed.problem)
        blocks, cursor, final = [], 0, None
        for message in parser.messages:
            body = handed.restore(message.content[0].text) if message.content else ""
            if not (message.recipient or "").startswith("functions."):
                final = body if message.channel == "final" else final
                continue
            if len(blocks) == MAX_CALLS or not message.content:
                continue
            # where the call stands in the text: from its recipient to the end of its body
            start = max(text.find(f"to={message.recipient}", cursor), cursor)
            found = text.find(body, start) if body else -1
            end = found + len(body) if found >= 0 else start
            cursor = end
            name = message.recipient.split("functions.", 1)[1]
            if not message.content_type or "json" in message.content_type:
                block = check_named_call(len(blocks), name, body, start, end, known, True, NOT_CLOSED, EMPTY, NOT_JSON)
            else:  # another content type: its text is the arguments, as the server passes it on
                checks = [Check("closed", True), Check("json", True), Check("shape", True)]
                block = finish_call(len(blocks), body, start, end, checks, name, body, known)
            blocks.append(block)
        if blocks:
            return result_of(self.name, blocks, text, "server")
        if parser.current_recipient is not None:
            return as_text(self.name, text, [], "server")  # a message to a tool, cut off: no call, nothing final
        current = handed.restore(parser.current_content)
        if final is None and current and parser.current_channel in (None, "final"):
            final = current  # a final answer cut off: what there is of it
        return result_of(self.name, [], final if final is not None else text, "server")

    def _refused(self, text: str, problem: str) -> ParseResult:
        """The reply as one error and no call: what a server answers when harmony's parser refuses it."""
        checks = pad_checks([Check("closed", True), Check("json", True), Check("shape", False, problem)], NATIVE_CHECKS)
        return result_of(self.name, [Block(0, text, 0, len(text), checks, None, problem)], text, "server")


FORMAT = GptOssFormat()
