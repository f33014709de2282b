"""Check your understanding: two or three questions at the end of a lesson, each answer revealed on demand.

The words are in lessons/<lesson>.md, sections "## Question N" and "## Answer N"; every figure
in them is a {placeholder} filled here by the engine, from the lesson's own data or from what
the page passes in (the tools in its editor, a mask it computed), so an answer matches what
the learner sees above it.
"""

from __future__ import annotations

import json

import streamlit as st

from engine.core.styles import find_name_token, parse_turn
from engine.core.tokenizer import IM_END, REAL_VOCAB, TOOL_CALL, load_tokenizer
from engine.core.tooldefs import load_tool_set
from engine.harness.loop import load_scenario, run_scenario
from engine.harness.tools import run_tool
from engine.teaching.calculator import measure_tools_cost
from ui.state import style
from ui.tool_editor import _add_tool
from ui.words import lesson


def _why_call_a_tool(**_) -> dict:
    tok = load_tokenizer()
    spaced, bare = tok.encode(" strawberry"), tok.encode("strawberry")
    count = run_tool("count_letter", {"word": "strawberry", "letter": "r"}).text
    return {"spaced_tokens": len(spaced), "spaced_id": spaced[0], "bare_tokens": len(bare),
            "bare_pieces": " | ".join(tok.token_text(i) for i in bare), "count": count}


def _tools_as_schemas(tools: list[dict] | None = None, **_) -> dict:
    tools = load_tool_set("strawberry") if tools is None else tools
    now, more = measure_tools_cost(tools, "native"), measure_tools_cost(_add_tool(tools), "native")
    return {"count": len(tools), "total": now.total, "with_new": more.total, "added": more.total - now.total,
            "ten": f"{10 * now.total:,}", "definitions": now.definitions, "instructions": now.instructions}


def _the_model_writes_a_call(**_) -> dict:
    tok = load_tokenizer()
    call = load_scenario("strawberry").turns[style()][0].text
    pieces = [tok.token_text(i) for i in tok.encode(call)]
    name_at = find_name_token(pieces, style())
    return {"tool_call": TOOL_CALL, "call_tokens": len(pieces) + 1, "im_end": IM_END,
            "name_at": "?" if name_at is None else name_at + 1, "name_token": "?" if name_at is None else pieces[name_at]}


def _check_run_return(**_) -> dict:
    from engine.teaching.cost import measure_malformed_cost

    scenario, chosen = load_scenario("missing-brace"), style()
    bad = scenario.turns[chosen][scenario.malformed_turn].text
    cost = measure_malformed_cost(scenario, chosen)
    mixed = load_scenario("mixed-turn")
    # the calls each policy would run from the mixed turn: the parser's verdict is all the harness goes by
    ran = {p: len(parse_turn(mixed.turns["native"][0].text, mixed.tools, "native", p).calls) for p in ("per-block", "vllm")}
    return {"error": parse_turn(bad, scenario.tools, chosen).errors[0].error, "measured": f"{cost.measured_in:,}",
            "formula": cost.formula_text, "a_bad": cost.a_bad, "e": cost.e, "n_later": cost.n_later,
            "per_block_ran": ran["per-block"], "vllm_ran": ran["vllm"]}


def _when_not_to_call(**_) -> dict:
    france = [{"role": "user", "content": "What is the capital of France?"}]
    run = run_scenario(load_scenario("strawberry"), "native")
    return {"france_tools": measure_tools_cost(load_tool_set("strawberry"), "native", france).total,
            "calls": len(run.steps), "answer": run.answer}


def _constrained_decoding(allowed: int | str = "?", **_) -> dict:
    return {"allowed": allowed, "vocab": f"{REAL_VOCAB:,}", "tools": len(load_tool_set("strawberry"))}


FIGURES = {
    "why-call-a-tool": _why_call_a_tool, "tools-as-schemas": _tools_as_schemas,
    "the-model-writes-a-call": _the_model_writes_a_call, "check-run-return": _check_run_return,
    "when-not-to-call": _when_not_to_call, "constrained-decoding": _constrained_decoding,
}


@st.cache_data(max_entries=64, show_spinner=False)
def _figures(lesson_id: str, chosen_style: str, page_figures: str) -> dict:
    # cached per lesson, style and the page's own figures: some answers replay whole scripted runs
    return FIGURES[lesson_id](**json.loads(page_figures)) if lesson_id in FIGURES else {}


def questions(lesson_id: str, **page_figures) -> list[tuple[str, str]]:
    """The lesson's (question, answer) pairs with their figures filled in."""
    text = lesson(lesson_id)
    # never sort the keys: a tool's keys are rendered in their own order, and the order changes the count
    values = _figures(lesson_id, style(), json.dumps(page_figures))
    pairs, n = [], 1
    while f"question {n}" in text and f"answer {n}" in text:
        pairs.append((text[f"question {n}"].format(**values), text[f"answer {n}"].format(**values)))
        n += 1
    return pairs


def check_understanding(lesson_id: str, **page_figures) -> None:
    """The questions, each with its answer behind an expander, so the learner tries first."""
    pairs = questions(lesson_id, **page_figures)
    if not pairs:
        return
    st.header("Check your understanding")
    st.caption("Try each question first, using the page above; then open the answer.")
    for n, (question, answer) in enumerate(pairs, start=1):
        st.markdown(f"**{n}.** {question}")
        with st.expander(f"Answer {n}"):
            st.markdown(answer)
