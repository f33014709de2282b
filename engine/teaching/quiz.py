"""The figures in each lesson's "check your understanding" answers, computed by the engine.

The words are in lessons/<lesson>.md ("## Question N", "## Answer N"); each figure in them is a
{placeholder} filled from the dataclass below for that lesson, computed from the lesson's own
data (its scenario, its tool set) or from what the page passes in (the tools in its editor, a
mask it computed), so an answer matches what the learner sees above it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..core.call_formats import check_title, find_name_token, parse_turn
from ..core.tokenizer import IM_END, REAL_VOCAB, TOOL_CALL, TOOL_CALL_END, load_tokenizer
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
    tool_call_end: int
    call: str  # the scripted call's text
    call_only: int  # its tokens, from its first to </tool_call> (lesson 8's count)
    call_tokens: int  # the same and the <|im_end|> that ends the turn (lesson 3's step-through)
    im_end: int
    word_pieces: str  # "strawberry" inside the call, its tokens with " | " between them
    word_tokens: int
    name_at: int | str  # 1-based position of the name's first token ("?" if not found)
    name_token: str


@dataclass(frozen=True)
class CheckRunReturn:
    error: str  # the error the broken call gets back
    failed_at: int  # 1-based: the first check the broken block fails, in the checks table's order
    failed_check: str  # its title, as the checks table shows it
    passed_checks: str  # the checks before it, in words ("the check before it, *…*, passed")
    checks: int  # the checks in the table
    measured: str  # its measured extra input tokens, formatted
    formula: str
    a_bad: int
    e: int
    n_later: int
    per_block_ran: int  # calls of the mixed turn each policy runs
    vllm_ran: int


@dataclass(frozen=True)
class WhenNotToCall:
    france_tools: int  # what the two tools cost beside the France question
    strawberry_tools: int  # and beside the strawberry question
    calls: int  # model calls of the strawberry run
    answer: str | None


@dataclass(frozen=True)
class ConstrainedDecoding:
    allowed: int | str  # tokens the grammar allowed where the page looked ("?" when it did not)
    vocab: str
    tools: int
    cut_check: str  # the check lesson 6's cut-off reply fails, as lesson 4's table titles it
    cut_error: str  # and the error the harness answers it with


def figure_why_call_a_tool(**_) -> WhyCallATool:
    tok = load_tokenizer()
    spaced, bare = tok.encode(" strawberry"), tok.encode("strawberry")
    count = run_tool("count_letter", {"word": "strawberry", "letter": "r"}).text
    return WhyCallATool(len(spaced), spaced[0], len(bare), " | ".join(tok.token_text(i) for i in bare), count)


def figure_tools_as_schemas(tools: list[dict] | None = None, **_) -> ToolsAsSchemas:
    tools = load_tool_set("strawberry") if tools is None else tools
    now, more = measure_tools_cost(tools, "native"), measure_tools_cost(add_example_tool(tools), "native")
    return ToolsAsSchemas(
        len(tools),
        now.total,
        more.total,
        more.total - now.total,
        f"{10 * now.total:,}",
        now.definitions,
        now.instructions,
    )


def word_pieces(pieces: list[str], word: str) -> list[str] | None:
    """The run of consecutive tokens that spells `word` exactly (no leading space), or None where no run does.

    Inside a call's JSON string a word follows a quote, not a space, so it is cut as the bare word."""
    for start in range(len(pieces)):
        text = ""
        for end in range(start, len(pieces)):
            text += pieces[end]
            if text == word:
                return pieces[start : end + 1]
            if not word.startswith(text):
                break
    return None


def figure_the_model_writes_a_call(style: str = "native", **_) -> TheModelWritesACall:
    tok = load_tokenizer()
    call = load_scenario("strawberry").turns[style][0].text
    pieces = [tok.token_text(i) for i in tok.encode(call)]
    name_at = find_name_token(pieces, style)
    word = word_pieces(pieces, "strawberry") or []
    return TheModelWritesACall(
        TOOL_CALL,
        TOOL_CALL_END,
        call,
        len(pieces),
        len(pieces) + 1,
        IM_END,
        " | ".join(word),
        len(word),
        "?" if name_at is None else name_at + 1,
        "?" if name_at is None else pieces[name_at],
    )


def failed_block(verdict):
    """The block a parse's first error came from."""
    return next(b for b in verdict.blocks if b.index == verdict.errors[0].block)


def first_failure(block, style: str) -> tuple[int, str, str]:
    """A broken block's first failed check: its 1-based place in the table, its title (in the words of `style`'s
    parser), and what came before it in words."""
    at = next(n for n, c in enumerate(block.checks) if c.passed is False)
    before = [f"*{check_title(style, c.name)}*" for c in block.checks[:at]]
    passed = (
        "it is the first check"
        if not before
        else f"the check before it, {before[0]}, passed"
        if len(before) == 1
        else f"the checks before it ({'; '.join(before)}) passed"
    )
    return at + 1, check_title(style, block.checks[at].name), passed


def figure_check_run_return(style: str = "native", **_) -> CheckRunReturn:
    from .cost import malformed_cost_of

    scenario = load_scenario("missing-brace")
    bad = scenario.turns[style][scenario.malformed_turn].text
    cost = malformed_cost_of(scenario.name, style)
    mixed = load_scenario("mixed-turn")
    # the calls each policy would run from the mixed turn: the parser's verdict is all the harness goes by
    ran = {
        p: len(parse_turn(mixed.turns["native"][0].text, mixed.tools, "native", p).calls) for p in ("per-block", "vllm")
    }
    verdict = parse_turn(bad, scenario.tools, style)
    block = failed_block(verdict)
    failed_at, failed_check, passed = first_failure(block, style)
    return CheckRunReturn(
        verdict.errors[0].error,
        failed_at,
        failed_check,
        passed,
        len(block.checks),
        f"{cost.measured_in:,}",
        cost.formula_text,
        cost.a_bad,
        cost.e,
        cost.n_later,
        ran["per-block"],
        ran["vllm"],
    )


def figure_when_not_to_call(**_) -> WhenNotToCall:
    france = [{"role": "user", "content": "What is the capital of France?"}]
    scenario = load_scenario("strawberry")
    run = run_scenario(scenario, "native")
    tools = load_tool_set("strawberry")
    return WhenNotToCall(
        measure_tools_cost(tools, "native", france).total,
        measure_tools_cost(tools, "native", scenario.messages).total,
        len(run.calls),
        run.answer,
    )


def figure_constrained_decoding(allowed: int | str = "?", **_) -> ConstrainedDecoding:
    # the cut-off reply the page walks through the grammar (native: the lesson's only style)
    cut = load_scenario("cut-off")
    verdict = parse_turn(cut.turns["native"][cut.malformed_turn].text, cut.tools, "native")
    _, cut_check, _ = first_failure(failed_block(verdict), verdict.style)
    return ConstrainedDecoding(
        allowed, f"{REAL_VOCAB:,}", len(load_tool_set("strawberry")), cut_check, verdict.errors[0].error
    )


FIGURES = {
    "why-call-a-tool": figure_why_call_a_tool,
    "tools-as-schemas": figure_tools_as_schemas,
    "the-model-writes-a-call": figure_the_model_writes_a_call,
    "check-run-return": figure_check_run_return,
    "when-not-to-call": figure_when_not_to_call,
    "constrained-decoding": figure_constrained_decoding,
}


def compute_quiz_values(lesson_id: str, style: str = "native", **page_figures) -> dict:
    """The {placeholder} values of a lesson's questions and answers; {} for a lesson without figures."""
    if lesson_id not in FIGURES:
        return {}
    return asdict(FIGURES[lesson_id](style=style, **page_figures))
