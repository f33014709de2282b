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
"""

from __future__ import annotations

import functools
import json
import os
import re

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
NOT_CLOSED = "error: the call is not closed with <|call|>; was the reply cut off?"
EMPTY = "error: the call's <|message|> is empty"
NOT_JSON = "error: the message to functions.NAME is not valid JSON"


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
        as the server's request fails.
        """
        from openai_harmony import Role, StreamableParser

        known = known_tools(tools)
        parser = StreamableParser(load_harmony(), Role.ASSISTANT)
        try:
            for token_id in self.encode(text):
                parser.process(token_id)
        except Exception as error:  # HarmonyError: the tokens are not harmony messages
            problem = f"error: harmony's parser refuses the reply: {str(error)[:160]}"
            checks = pad_checks(
                [Check("closed", True), Check("json", True), Check("shape", False, problem)], NATIVE_CHECKS
            )
            return result_of(self.name, [Block(0, text, 0, len(text), checks, None, problem)], text, "server")
        blocks, cursor, final = [], 0, None
        for message in parser.messages:
            body = message.content[0].text if message.content else ""
            if not (message.recipient or "").startswith("functions."):
                final = body if message.channel == "final" else final
                continue
            if len(blocks) == MAX_CALLS or not message.content:
                continue
            # where the call stands in the text: from its recipient to the end of its body
            start = max(text.find(f"to={message.recipient}", cursor), cursor)
            end = text.find(body, start) + len(body) if body and body in text[start:] else start
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
        if final is None and parser.current_content and parser.current_channel in (None, "final"):
            final = parser.current_content  # a final answer cut off: what there is of it
        return result_of(self.name, [], final if final is not None else text, "server")


FORMAT = GptOssFormat()
