"""DeepSeek-V3.1: the same tokenizer, the tool prompt DeepSeek documents for V3.1, and V3.1's call layout.

DeepSeek-V3.1's model card gives the layout a tool prompt takes, `{system prompt}\n\n{tool_description}`,
and its exact words (a `## Tools` section, one `### name` per tool with its description and
`json.dumps` of its parameters, then the format of a call). This family writes that description
into the system message and renders the result with DeepSeek-V3's official template
(assets/deepseek-v3-tokenizer): V3.1's own chat template is not vendored here, so the prompt
around the tools is V3's, and the tokenizer is V3's (V3.1 adds `<think>` and `</think>` as single
tokens, which a reply with reasoning would count differently). A call is
`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{JSON}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
found between the same markers vLLM's deepseekv31_tool_parser.py reads. Under `server` a call with
no `<｜tool▁call▁end｜>` is skipped, as that parser's regex skips it, and a turn with no whole call
is handed back as text.
"""

from __future__ import annotations

import json

from ..parse import NATIVE_CHECKS, Block, Check, pad_checks
from .calls import check_named_call
from .deepseek_v3 import CALL_BEGIN, CALL_END, CALL_SEP, CALLS_BEGIN, CALLS_END, DeepSeekV3Format

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


class DeepSeekV31Format(DeepSeekV3Format):
    name = "deepseek-v3.1"
    family = "deepseek-v3.1"
    label = "DeepSeek-V3.1"
    order = 45
    renderer = (
        "DeepSeek-V3's chat template via transformers' Jinja renderer, tools as DeepSeek-V3.1's model card writes them"
    )
    parser_reference = "vLLM deepseek_v31 tool parser"
    server_reference = "vLLM deepseekv31_tool_parser.py, SGLang deepseekv31_detector.py"
    check_titles = {  # noqa: RUF012
        "closed": "the call is closed with <｜tool▁call▁end｜>",
        "json": "the arguments after <｜tool▁sep｜> are valid JSON",
        "shape": "the tool is named before <｜tool▁sep｜>",
    }
    not_closed, empty, not_json, no_call = NOT_CLOSED, EMPTY, NOT_JSON, NO_CALL
    name_prefix = CALLS_BEGIN + CALL_BEGIN

    def describe(self, tools: list[dict]) -> str:
        # the model card's layout: {system prompt}\n\n{tool_description}
        return "\n\n" + tool_description(tools)

    def described_tool(self, tool: dict) -> str:
        return describe_tool(tool).rstrip("\n")

    def call_tag(self, name: str) -> tuple[str, str]:
        return f"{CALLS_BEGIN}{CALL_BEGIN}{name}{CALL_SEP}", f"{CALL_END}{CALLS_END}"

    def write_call(self, name: str, arguments: dict) -> str:
        return (
            f"{CALLS_BEGIN}{CALL_BEGIN}{name}{CALL_SEP}{json.dumps(arguments, ensure_ascii=False)}{CALL_END}{CALLS_END}"
        )

    def read_call(
        self, index: int, head: str, rest: str, start: int, end: int, known: dict[str, dict], closed: bool, policy: str
    ) -> Block | None:
        if policy == "server" and not closed:
            return None
        if not closed:
            return Block(
                index,
                rest,
                start,
                end,
                pad_checks([Check("closed", False, NOT_CLOSED)], NATIVE_CHECKS),
                None,
                NOT_CLOSED,
            )
        return check_named_call(index, head, rest, start, end, known, True, NOT_CLOSED, EMPTY, NOT_JSON)


FORMAT = DeepSeekV31Format()
