"""The figures in each lesson's "check your understanding" answers, computed by the engine.

The words are in lessons/<lesson>.md ("## Question N", "## Answer N"); each figure in them is a
{placeholder} filled from the dataclass below for that lesson, computed from the lesson's own
data (its scenario, its tool set) or from what the page passes in (the tools in its editor, a
mask it computed), so an answer matches what the learner sees above it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..core.styles import find_name_token, parse_turn
from ..core.tokenizer import IM_END, REAL_VOCAB, TOOL_CALL, load_tokenizer
from ..core.tooldefs import add_example_tool, load_tool_set
from ..harness.loop import load_scenario, run_scenario
from ..harness.tools import run_tool
from .calculator import measure_tools_cost


@dataclass(frozen=True)
class WhyCallATool:
    spaced_tokens: int  # tokens in " strawberry", leading space included
    spaced_id: int
    bare_tokens: int  # tokens in "strawberry" at the start of a text
    bare_pieces: str  # those tokens, " | " between them
    count: str  # what count_letter returns for the r's


@dataclass(frozen=True)
class ToolsAsSchemas:
    count: int  # tools in the editor
    total: int  # their prompt tokens
    with_new: int  # the same with one example tool added
    added: int  # what that tool costs
    ten: str  # ten calls' worth, formatted
    definitions: int
    instructions: int


@dataclass(frozen=True)
class TheModelWritesACall:
    tool_call: int  # the <tool_call> token id
    call_tokens: int  # the call's tokens, <|im_end|> included
    im_end: int
    name_at: int | str  # 1-based position of the name's first token ("?" if not found)
    name_token: str


@dataclass(frozen=True)
class CheckRunReturn:
    error: str  # the error the broken call gets back
    measured: str  # its measured extra input tokens, formatted
    formula: str
    a_bad: int
    e: int
    n_later: int
    per_block_ran: int  # calls of the mixed turn each policy runs
    vllm_ran: int


@dataclass(frozen=True)
class WhenNotToCall:
    france_tools: int  # prompt tokens of the France question with the two tools
    calls: int  # model calls of the strawberry run
    answer: str | None


@dataclass(frozen=True)
class ConstrainedDecoding:
    allowed: int | str  # tokens the grammar allowed where the page looked ("?" when it did not)
    vocab: str
    tools: int


def figure_why_call_a_tool(**_) -> WhyCallATool:
    tok = load_tokenizer()
    spaced, bare = tok.encode(" strawberry"), tok.encode("strawberry")
    count = run_tool("count_letter", {"word": "strawberry", "letter": "r"}).text
    return WhyCallATool(len(spaced), spaced[0], len(bare), " | ".join(tok.token_text(i) for i in bare), count)


def figure_tools_as_schemas(tools: list[dict] | None = None, **_) -> ToolsAsSchemas:
    tools = load_tool_set("strawberry") if tools is None else tools
    now, more = measure_tools_cost(tools, "native"), measure_tools_cost(add_example_tool(tools), "native")
    return ToolsAsSchemas(len(tools), now.total, more.total, more.total - now.total, f"{10 * now.total:,}",
                          now.definitions, now.instructions)


def figure_the_model_writes_a_call(style: str = "native", **_) -> TheModelWritesACall:
    tok = load_tokenizer()
    call = load_scenario("strawberry").turns[style][0].text
    pieces = [tok.token_text(i) for i in tok.encode(call)]
    name_at = find_name_token(pieces, style)
    return TheModelWritesACall(TOOL_CALL, len(pieces) + 1, IM_END, "?" if name_at is None else name_at + 1,
                               "?" if name_at is None else pieces[name_at])


def figure_check_run_return(style: str = "native", **_) -> CheckRunReturn:
    from .cost import measure_malformed_cost

    scenario = load_scenario("missing-brace")
    bad = scenario.turns[style][scenario.malformed_turn].text
    cost = measure_malformed_cost(scenario, style)
    mixed = load_scenario("mixed-turn")
    # the calls each policy would run from the mixed turn: the parser's verdict is all the harness goes by
    ran = {p: len(parse_turn(mixed.turns["native"][0].text, mixed.tools, "native", p).calls) for p in ("per-block", "vllm")}
    return CheckRunReturn(parse_turn(bad, scenario.tools, style).errors[0].error, f"{cost.measured_in:,}",
                          cost.formula_text, cost.a_bad, cost.e, cost.n_later, ran["per-block"], ran["vllm"])


def figure_when_not_to_call(**_) -> WhenNotToCall:
    france = [{"role": "user", "content": "What is the capital of France?"}]
    run = run_scenario(load_scenario("strawberry"), "native")
    return WhenNotToCall(measure_tools_cost(load_tool_set("strawberry"), "native", france).total, len(run.calls), run.answer)


def figure_constrained_decoding(allowed: int | str = "?", **_) -> ConstrainedDecoding:
    return ConstrainedDecoding(allowed, f"{REAL_VOCAB:,}", len(load_tool_set("strawberry")))


FIGURES = {
    "why-call-a-tool": figure_why_call_a_tool, "tools-as-schemas": figure_tools_as_schemas,
    "the-model-writes-a-call": figure_the_model_writes_a_call, "check-run-return": figure_check_run_return,
    "when-not-to-call": figure_when_not_to_call, "constrained-decoding": figure_constrained_decoding,
}


def compute_quiz_values(lesson_id: str, style: str = "native", **page_figures) -> dict:
    """The {placeholder} values of a lesson's questions and answers; {} for a lesson without figures."""
    if lesson_id not in FIGURES:
        return {}
    return asdict(FIGURES[lesson_id](style=style, **page_figures))
