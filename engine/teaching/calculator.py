"""What a run of tool calls costs in prompt tokens, for tool definitions a user writes (the calculator page).

A run here is: the user's question, then `calls` tool calls that succeed, `malformed` extra
calls that fail the checks and get an error back (each repaired by the next call), and a
final answer. Every model call re-sends the whole context, so each call's input is the full
prompt rendered by engine.core.prompt (the Qwen3 template natively, ReAct prose otherwise) and
counted by the real tokenizer; the conversation grows as the harness grows it
(engine.harness.loop: the assistant's text, then each result as a `tool` message). The error
text of a malformed call is the parser's own (engine.core.parse), so every figure is exact.

Each call's prompt is split into the tool definitions (the tool spans), the template's own
instructions and the conversation, so a chart can show the definitions being paid again
on every call.

"What the tools cost" has one meaning on every page: the prompt with the tools minus the same
prompt without them (`measure_tools_cost`). It is the definitions (one line per tool, natively)
plus the instructions the template writes around them only when there are tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..core.call_formats import get_format, parse_turn
from ..core.prompt import Request, count_tools_tokens, render
from ..core.tokenizer import QwenTokenizer, load_tokenizer
from ..errors import BadInput
from ..harness.ledger import Ledger

QUESTION = "How many times does the letter r appear in strawberry?"
PLACES = ("start", "end")  # where the malformed calls happen: before the first good call, or before the last


@dataclass(frozen=True)
class PlannedCall:
    """One model call of the run and what it costs."""

    number: int  # 1-based
    kind: Literal["tool call", "malformed call", "final answer"]
    input_tokens: int  # the whole prompt, re-sent
    tools_tokens: int  # of which: the tool definitions (tool spans)
    template_tokens: int  # of which: the template's instructions and framing
    conversation_tokens: int  # of which: the messages so far and the generation prompt
    output_tokens: int  # the turn's tokens, with <|im_end|>
    text: str  # what the model writes in this call
    error: str | None = None  # for a malformed call: the error the harness sends back

    @property
    def tools_cost(self) -> int:
        """The tools' share of this call: definitions + the template's instructions (the run has no system message of its own)."""
        return self.tools_tokens + self.template_tokens


@dataclass(frozen=True)
class ToolsCost:
    """What the tools cost in one prompt, and its two parts."""

    total: int  # the prompt with the tools minus the same prompt without them
    definitions: int  # of which: the tool definitions themselves (the tool spans)
    instructions: int  # of which: the template's text around them (the format of a call, the framing)


def measure_tools_cost(
    tools: list[dict], style: str = "native", messages: list[dict] | None = None, tokenizer: QwenTokenizer | None = None
) -> ToolsCost:
    """The tools cost of a request, measured as a difference of two prompts, split into definitions and instructions.

    The definitions are counted on the spans of the prompt; the instructions are what is left
    of the difference, so the two parts always add up to the total.
    """
    tok = tokenizer or load_tokenizer()
    messages = messages if messages is not None else [{"role": "user", "content": QUESTION}]
    request = Request(messages, tools, style)
    total = count_tools_tokens(request, tok)
    definitions = sum(s.tokens for s in render(request, tok).spans if s.kind == "tool")
    return ToolsCost(total, definitions, total - definitions)


def measure_family_tools_cost(tools: list[dict], family: str, messages: list[dict] | None = None) -> ToolsCost:
    """The same tools cost in another model family's own renderer and tokenizer (engine.core.call_formats), same split."""
    from ..core.call_formats import format_of_family, price_tools

    price = price_tools(
        format_of_family(family).name,
        messages if messages is not None else [{"role": "user", "content": QUESTION}],
        tools,
    )
    return ToolsCost(price.total, price.definitions, price.instructions)


@dataclass
class RunCost(Ledger):
    """A whole planned run, call by call (PlannedCall records), with its totals."""

    style: str = "native"

    @property
    def tools_tokens(self) -> int:
        """Tokens spent on the tool definitions over the whole run."""
        return sum(c.tools_tokens for c in self.calls)

    @property
    def tools_cost(self) -> int:
        """Tokens spent on the tools (definitions + the template's instructions) over the whole run."""
        return sum(c.tools_cost for c in self.calls)

    def totals(self) -> dict:
        return {
            **self.token_totals(),
            "tools_tokens": self.tools_tokens,
            "tools_cost": self.tools_cost,
            "malformed": sum(c.kind == "malformed call" for c in self.calls),
        }


def example_value(schema: object) -> object:
    """A plausible value for a JSON Schema: its first enum value, its type's simplest example."""
    if not isinstance(schema, dict):
        return "example"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "string")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    return {"integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {}, "null": None}.get(kind, "example")


def example_arguments(tool: dict) -> dict:
    """Arguments for `tool` that fit its schema: one example value per required parameter."""
    params = tool.get("function", {}).get("parameters") or {}
    props = params.get("properties") or {}
    required = params.get("required") or list(props)
    return {name: example_value(props.get(name)) for name in required if isinstance(name, str)}


def call_text(name: str, arguments: dict, style: str) -> str:
    """A call as the model writes it in `style`: a <tool_call> block natively, Action lines in ReAct."""
    return get_format(style).write_call(name, arguments)


def malformed_text(good: str) -> str:
    """The same call with its last closing brace missing (the broken turn of [[tool-calling-explainer]])."""
    cut = good.rfind("}")
    return good[:cut] + good[cut + 1 :]


def plan_run(
    tools: list[dict],
    style: str = "native",
    calls: int = 1,
    malformed: int = 0,
    question: str = QUESTION,
    result: str = "3",
    answer: str = 'The letter "r" appears 3 times in "strawberry".',
    arguments: dict | None = None,
    place: str = "start",
    tokenizer: QwenTokenizer | None = None,
) -> RunCost:
    """The exact token cost of a run: `calls` good calls to the first tool, `malformed` failed ones, an answer.

    `arguments` default to example values from the first tool's schema; with no tools the
    run is the question and its answer only.
    """
    if calls < 0 or malformed < 0:
        raise BadInput("the number of calls and of malformed calls cannot be negative")
    if place not in PLACES:
        raise BadInput(f"place must be one of {', '.join(PLACES)}, not {place!r}")
    if (calls or malformed) and not tools:
        raise BadInput("a run with tool calls needs at least one tool")
    tok = tokenizer or load_tokenizer()
    if tools:
        first = tools[0]
        name = str(first.get("function", {}).get("name", ""))
        good = call_text(name, arguments if arguments is not None else example_arguments(first), style)
    else:
        good = ""
    bad = malformed_text(good) if good else ""
    # the order of the turns: each malformed call is followed by its repair
    goods = ["tool call"] * calls
    fails = ["malformed call"] * malformed
    # at the start: before every good call; at the end: just before the last good call, which repairs them
    kinds = fails + goods if place == "start" or not goods else goods[:-1] + fails + goods[-1:]
    kinds.append("final answer")
    messages = [{"role": "user", "content": question}]
    run = RunCost(style=style)
    for number, kind in enumerate(kinds, start=1):
        prompt = render(Request(messages, tools, style), tok)
        parts = {"tool": 0, "template": 0, "message": 0, "generation": 0}
        for span in prompt.spans:
            parts[span.kind] += span.tokens
        text = {"tool call": good, "malformed call": bad, "final answer": get_format(style).write_answer(answer)}[kind]
        error = None
        if kind == "malformed call":
            parsed = parse_turn(text, tools, style)
            error = parsed.errors[0].error if parsed.errors else "error: the call is malformed"
        run.calls.append(
            PlannedCall(
                number=number,
                kind=kind,
                input_tokens=prompt.count,
                tools_tokens=parts["tool"],
                template_tokens=parts["template"],
                conversation_tokens=parts["message"] + parts["generation"],
                output_tokens=tok.count(text) + 1,  # the turn ends with <|im_end|>
                text=text,
                error=error,
            )
        )
        messages = [*messages, {"role": "assistant", "content": text}]
        if kind != "final answer":
            messages.append({"role": "tool", "content": error if error is not None else result})
    return run
