"""DeepSeek-V3: the V3 tokenizer and official chat template, with the tool prompt DeepSeek documents for V3.1.

DeepSeek-V3's official template (assets/deepseek-v3-tokenizer/tokenizer_config.json) has no place
for tool definitions: it ignores `tools`. DeepSeek's model card for DeepSeek-V3.1 gives the
layout a tool prompt takes, `{system prompt}\\n\\n{tool_description}`, and its exact words (a
`## Tools` section, one `### name` per tool with its description and `json.dumps` of its
parameters, then the format of a call). This family writes that description into the system
message and renders the result with the official template. A call is
`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{JSON}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
found between the same markers vLLM's deepseek_v31 tool parser reads.
"""

from __future__ import annotations

import json

from ...settings import ASSETS
from ..parse import ParseResult
from .base import Opener
from .calls import MAX_CALLS, check_named_call, known_tools, result_of
from .hf import TemplateFormat

CALLS_BEGIN, CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL_BEGIN, CALL_SEP, CALL_END = "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>"
NOT_CLOSED = "error: the call is not closed with <｜tool▁call▁end｜>; was the reply cut off?"
EMPTY = "error: the call has no arguments after <｜tool▁sep｜>"
NOT_JSON = "error: the arguments after <｜tool▁sep｜> are not valid JSON"
NO_CALL = "error: <｜tool▁calls▁begin｜> is followed by no <｜tool▁call▁begin｜>NAME<｜tool▁sep｜> call"

# DeepSeek-V3.1's model card, "ToolCall": the tool_description, word for word
TOOLS_HEADER = "## Tools\nYou have access to the following tools:\n\n"
TOOLS_FORMAT = (
    "IMPORTANT: ALWAYS adhere to this exact format for tool use:\n"
    f"{CALLS_BEGIN}{CALL_BEGIN}tool_call_name{CALL_SEP}tool_call_arguments{CALL_END}{{additional_tool_calls}}{CALLS_END}\n\n"
    "Where:\n"
    "- `tool_call_name` must be an exact match to one of the available tools\n"
    "- `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema\n"
    "- For multiple tool calls, chain them directly without separators or spaces"
)


def describe_tool(tool: dict) -> str:
    """One tool as the model card's tool_description writes it."""
    fn = tool.get("function", {})
    return f"### {fn.get('name', '')}\nDescription: {fn.get('description', '')}\n\nParameters: {json.dumps(fn.get('parameters', {}))}\n\n"


def tool_description(tools: list[dict]) -> str:
    return TOOLS_HEADER + "".join(describe_tool(t) for t in tools) + TOOLS_FORMAT


class DeepSeekV3Format(TemplateFormat):
    name = "deepseek-v3"
    family = "deepseek-v3"
    label = "DeepSeek-V3"
    maker = "DeepSeek"
    order = 40
    folder = ASSETS / "deepseek-v3-tokenizer"
    opener = Opener(CALLS_BEGIN, "a special token")
    renderer = "DeepSeek-V3's chat template via transformers' Jinja renderer, tools as DeepSeek-V3.1's model card writes them"
    parser_reference = "vLLM deepseek_v31 tool parser"
    special_opener = True
    check_titles = {  # noqa: RUF012
        "closed": "the call is closed with <｜tool▁call▁end｜>",
        "json": "the arguments after <｜tool▁sep｜> are valid JSON",
        "shape": "the tool is named before <｜tool▁sep｜>",
    }

    def template_messages(self, messages: list[dict], tools: list[dict]) -> tuple[list[dict], list[dict] | None]:
        if not tools:
            return messages, None
        if messages and messages[0].get("role") == "system":
            first = {**messages[0], "content": f"{messages[0].get('content', '')}\n\n{tool_description(tools)}"}
            return [first, *messages[1:]], None
        return [{"role": "system", "content": "\n\n" + tool_description(tools)}, *messages], None

    def tool_spans(self, text: str, tools: list[dict]) -> list[tuple[str, int, int]]:
        found, cursor = [], 0
        for tool in tools:
            body = describe_tool(tool).rstrip("\n")
            start = text.find(body, cursor)
            if start >= 0:
                found.append((tool.get("function", {}).get("name", "?"), start, start + len(body)))
                cursor = start + len(body)
        return found

    name_prefix = CALLS_BEGIN + CALL_BEGIN

    def call_tag(self, name: str) -> tuple[str, str]:
        return f"{CALLS_BEGIN}{CALL_BEGIN}{name}{CALL_SEP}", f"{CALL_END}{CALLS_END}"

    def write_call(self, name: str, arguments: dict) -> str:
        return f"{CALLS_BEGIN}{CALL_BEGIN}{name}{CALL_SEP}{json.dumps(arguments, ensure_ascii=False)}{CALL_END}{CALLS_END}"

    def parse(self, text: str, tools: list[dict], policy: str = "per-block", recover_bare: bool = False) -> ParseResult:
        start = text.find(CALLS_BEGIN)
        if start < 0:
            return result_of(self.name, [], text)
        known = known_tools(tools)
        blocks = []
        cursor = start
        # plain searches from marker to marker, linear in the turn's length (a regex per call was quadratic
        # on a turn of many begins); a begin with no separator before the next begin is skipped
        while len(blocks) < MAX_CALLS:
            begin = text.find(CALL_BEGIN, cursor)
            if begin < 0:
                break
            sep = text.find(CALL_SEP, begin + len(CALL_BEGIN))
            if sep < 0:
                break
            later = text.find(CALL_BEGIN, begin + len(CALL_BEGIN), sep)
            if later >= 0:
                cursor = later
                continue
            close = text.find(CALL_END, sep + len(CALL_SEP))
            closed = close >= 0
            end = close + len(CALL_END) if closed else len(text)
            body = text[sep + len(CALL_SEP) : close if closed else len(text)]
            blocks.append(check_named_call(len(blocks), text[begin + len(CALL_BEGIN) : sep], body, begin, end, known,
                                           closed, NOT_CLOSED, EMPTY, NOT_JSON))
            cursor = end
        if not blocks:
            from ..parse import NATIVE_CHECKS, Block, Check, pad_checks

            blocks = [Block(0, text[start:], start, len(text), pad_checks([Check("closed", False, NO_CALL)], NATIVE_CHECKS), None, NO_CALL)]
        return result_of(self.name, blocks)


FORMAT = DeepSeekV3Format()
