"""DeepSeek-V3.1: its own chat template, V3's tokenizer with V3.1's thinking tokens, and V3.1's call layout.

The prompt is DeepSeek-V3.1's chat template (assets/deepseek-v3.1-template, as llama.cpp keeps it),
which has no place for tools: DeepSeek-V3.1's model card gives the layout a tool prompt takes,
`{system prompt}\n\n{tool_description}`, and its exact words (a `## Tools` section, one `### name`
per tool with its description and `json.dumps` of its parameters, then the format of a call), which
this family writes into the system message. The template ends the prompt with
`<｜Assistant｜></think>` (thinking off). The tokenizer is V3's with two reserved ids named as V3.1
names them, `<think>` (128798) and `</think>` (128799), so each is one token. A call is
`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{JSON}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
the layout the template writes back into history, found between the same markers vLLM's
deepseekv31_tool_parser.py reads. Under `server` a call with no `<｜tool▁call▁end｜>` is skipped, as
that parser's regex skips it, and a turn with no whole call is handed back as text.
"""

from __future__ import annotations

import functools
import json

from ...settings import ASSETS
from ..parse import NATIVE_CHECKS, Block, Check, pad_checks
from .calls import check_named_call
from .deepseek_v3 import CALL_BEGIN, CALL_END, CALL_SEP, CALLS_BEGIN, CALLS_END, DeepSeekV3Format

NOT_CLOSED = "error: the call is not closed with <｜tool▁call▁end｜>; was the reply cut off?"
EMPTY = "error: the call has no arguments after <｜tool▁sep｜>"
NOT_JSON = "error: the arguments after <｜tool▁sep｜> are not valid JSON"
NO_CALL = "error: <｜tool▁calls▁begin｜> is followed by no <｜tool▁call▁begin｜>NAME<｜tool▁sep｜> call"
THINKING_TOKENS = {128798: "<think>", 128799: "</think>"}  # V3's reserved ids 798 and 799, as V3.1 names them

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
    renderer = "DeepSeek-V3.1's chat template via transformers' Jinja renderer, tools as its model card writes them"
    template_folder = ASSETS / "deepseek-v3.1-template"
    parser_reference = "vLLM deepseek_v31 tool parser"
    server_reference = "vLLM deepseekv31_tool_parser.py, SGLang deepseekv31_detector.py"
    check_titles = {  # noqa: RUF012
        "closed": "the call is closed with <｜tool▁call▁end｜>",
        "json": "the arguments after <｜tool▁sep｜> are valid JSON",
        "shape": "the tool is named before <｜tool▁sep｜>",
    }
    not_closed, empty, not_json, no_call = NOT_CLOSED, EMPTY, NOT_JSON, NO_CALL
    name_prefix = CALLS_BEGIN + CALL_BEGIN

    @property
    def chat_template(self) -> str:  # type: ignore[override]
        return (self.template_folder / "chat_template.jinja").read_text(encoding="utf-8")

    @functools.cached_property
    def _tok(self):
        from tokenizers import Tokenizer

        # V3's tokenizer with its reserved ids 798 and 799 renamed: <think> and </think> are single tokens
        spec = json.loads((self.folder / "tokenizer.json").read_text(encoding="utf-8"))
        for token in spec["added_tokens"]:
            if token["id"] in THINKING_TOKENS:
                token["content"], token["special"] = THINKING_TOKENS[token["id"]], False
        return Tokenizer.from_str(json.dumps(spec))

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
