"""DeepSeek-V3: the V3 tokenizer and official chat template, calls in V3's own layout.

DeepSeek-V3's official template (assets/deepseek-v3-tokenizer/tokenizer_config.json) has no place
for tool definitions: it ignores `tools`. It does write an assistant's tool calls back into
history, in V3's layout:
`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{JSON}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>`
(with one call, the template leaves out the closing `<｜tool▁calls▁end｜>`; the parser does not
need it). The tools go into the system message in the words of vLLM's tool chat template for
DeepSeek-V3 (examples/tool_chat_template_deepseekv3.jinja), which asks for that same layout.
The strict policy (per-block) reads that layout only; `server` reads it as vLLM's
deepseekv3_tool_parser.py and SGLang's deepseekv3_detector.py do: any word before
`<｜tool▁sep｜>`, a call that does not match the layout skipped, and a turn with no call that
matches handed back as text. DeepSeek-V3.1's layout is its own family (deepseek_v3_1.py).
"""

from __future__ import annotations

import json
import re

from ...settings import ASSETS
from ..parse import NATIVE_CHECKS, Block, Check, ParseResult, pad_checks
from .base import Opener
from .calls import MAX_CALLS, as_text, check_named_call, known_tools, result_of
from .hf import TemplateFormat

CALLS_BEGIN, CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL_BEGIN, CALL_SEP, CALL_END = "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>"
FENCE_OPEN, FENCE_CLOSE = "\n```json\n", "\n```"
NOT_CLOSED = "error: the call is not closed with <｜tool▁call▁end｜>; was the reply cut off?"
EMPTY = "error: the call has no arguments in its ```json fence"
NOT_JSON = "error: the arguments in the ```json fence are not valid JSON"
NOT_FENCED = "error: after <｜tool▁sep｜> write the tool's name, a newline, then its arguments in a ```json fence"
NOT_FUNCTION = "error: write function before <｜tool▁sep｜>: it is the only type of call"
NO_CALL = "error: <｜tool▁calls▁begin｜> is followed by no <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME call"
# the name on the first line after <｜tool▁sep｜>, the arguments inside the fence (vLLM's deepseekv3_tool_parser.py)
FENCED = re.compile(r"([^\n]*)\n```json\n(.*)\n```", re.DOTALL)

# vLLM's examples/tool_chat_template_deepseekv3.jinja: its words for the tools, after the system prompt
TOOLS_HEADER = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_FORMAT = (
    "\n</tools>\n\n"
    f"For function call returns, you should first print {CALLS_BEGIN}"
    "For each function call, you should return object like:\n"
    f"{CALL_BEGIN}function{CALL_SEP}<function_name>\n```json\n<function_arguments_in_json_format>\n```{CALL_END}"
    f"At the end of function call returns, you should print {CALLS_END}<｜end▁of▁sentence｜>"
)


def describe_tool(tool: dict) -> str:
    """One tool as that template writes it: its JSON on a line of its own."""
    return "\n" + json.dumps(tool, ensure_ascii=False)


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
    renderer = "DeepSeek-V3's chat template via transformers' Jinja renderer, tools in the words of vLLM's DeepSeek-V3 tool template"
    parser_reference = "vLLM deepseek_v3 tool parser"
    server_reference = "vLLM deepseekv3_tool_parser.py, SGLang deepseekv3_detector.py"
    policies = ("per-block", "server")
    special_opener = True
    check_titles = {  # noqa: RUF012
        "closed": "the call is closed with <｜tool▁call▁end｜>",
        "json": "the arguments in the ```json fence are valid JSON",
        "shape": "function, then the tool's name, before the fence",
    }
    # the module's own words, which the V3.1 family replaces with its own
    not_closed, empty, not_json, no_call = NOT_CLOSED, EMPTY, NOT_JSON, NO_CALL

    def describe(self, tools: list[dict]) -> str:
        """The tool prompt written into the system message."""
        return tool_description(tools)

    def described_tool(self, tool: dict) -> str:
        """One tool's text in that prompt: what its span covers."""
        return describe_tool(tool).strip("\n")

    def template_messages(self, messages: list[dict], tools: list[dict]) -> tuple[list[dict], list[dict] | None]:
        if not tools:
            return messages, None
        if messages and messages[0].get("role") == "system":
            first = {**messages[0], "content": f"{messages[0].get('content', '')}{self.describe(tools)}"}
            return [first, *messages[1:]], None
        return [{"role": "system", "content": self.describe(tools)}, *messages], None

    def tool_spans(self, text: str, tools: list[dict]) -> list[tuple[str, int, int]]:
        found, cursor = [], 0
        for tool in tools:
            body = self.described_tool(tool)
            start = text.find(body, cursor)
            if start >= 0:
                found.append((tool.get("function", {}).get("name", "?"), start, start + len(body)))
                cursor = start + len(body)
        return found

    name_prefix = CALLS_BEGIN + CALL_BEGIN + "function" + CALL_SEP

    def call_tag(self, name: str) -> tuple[str, str]:
        return f"{CALLS_BEGIN}{CALL_BEGIN}function{CALL_SEP}{name}{FENCE_OPEN}", f"{FENCE_CLOSE}{CALL_END}{CALLS_END}"

    def write_call(self, name: str, arguments: dict) -> str:
        return (
            f"{CALLS_BEGIN}{CALL_BEGIN}function{CALL_SEP}{name}{FENCE_OPEN}{json.dumps(arguments, ensure_ascii=False)}"
            f"{FENCE_CLOSE}{CALL_END}{CALLS_END}"
        )

    def read_call(
        self, index: int, head: str, rest: str, start: int, end: int, known: dict[str, dict], closed: bool, policy: str
    ) -> Block | None:
        """One call: `head` is what stands between <｜tool▁call▁begin｜> and <｜tool▁sep｜>, `rest` what follows
        up to <｜tool▁call▁end｜>. None: a call the server policy skips, as the servers' regexes do."""
        fenced = FENCED.fullmatch(rest) if closed else None
        if policy == "server" and fenced is None:
            return None
        if not closed:
            return Block(
                index,
                rest,
                start,
                end,
                pad_checks([Check("closed", False, self.not_closed)], NATIVE_CHECKS),
                None,
                self.not_closed,
            )
        if fenced is None:
            checks = [Check("closed", True), Check("json", False, NOT_FENCED)]
            return Block(index, rest, start, end, pad_checks(checks, NATIVE_CHECKS), None, NOT_FENCED)
        if policy != "server" and head.strip() != "function":
            checks = [Check("closed", True), Check("json", True), Check("shape", False, NOT_FUNCTION)]
            return Block(index, rest, start, end, pad_checks(checks, NATIVE_CHECKS), None, NOT_FUNCTION)
        return check_named_call(
            index, fenced.group(1), fenced.group(2), start, end, known, True, self.not_closed, self.empty, self.not_json
        )

    def parse(self, text: str, tools: list[dict], policy: str = "per-block", recover_bare: bool = False) -> ParseResult:
        start = text.find(CALLS_BEGIN)
        if start < 0:
            return result_of(self.name, [], text, policy)
        known = known_tools(tools)
        blocks: list[Block] = []
        cursor = start
        # plain searches from marker to marker, linear in the turn's length (a regex per call was quadratic
        # on a turn of many begins); a begin with no separator before the next begin is skipped, and the
        # separator found is kept for the begins before it (searched afresh from each, a run of begins
        # before one separator was quadratic)
        sep = -1
        while len(blocks) < MAX_CALLS:
            begin = text.find(CALL_BEGIN, cursor)
            if begin < 0:
                break
            if sep < begin + len(CALL_BEGIN):
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
            block = self.read_call(
                len(blocks),
                text[begin + len(CALL_BEGIN) : sep],
                text[sep + len(CALL_SEP) : close if closed else len(text)],
                begin,
                end,
                known,
                closed,
                policy,
            )
            if block is not None:
                blocks.append(block)
            cursor = end
        if not blocks:
            if policy == "server":
                # the servers find no call they can read, and hand the whole turn back as text
                return as_text(self.name, text, [], policy)
            blocks = [
                Block(
                    0,
                    text[start:],
                    start,
                    len(text),
                    pad_checks([Check("closed", False, self.no_call)], NATIVE_CHECKS),
                    None,
                    self.no_call,
                )
            ]
        return result_of(self.name, blocks, text, policy)


FORMAT = DeepSeekV3Format()
