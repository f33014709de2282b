"""How the failure gallery draws a case: the naive parser's reading, our verdicts, the grammar's mask, and the cost."""

from __future__ import annotations

import streamlit as st

from engine.core.tokenizer import REAL_VOCAB
from engine.teaching.case_cost import CaseCost
from ui.draw import call_words, draw_reading, show_token
from ui.numbers import format_count
from ui.views.step_data import walk_run
from ui.views.step_view import Sample, step_view


def plain(data_text: str) -> str:
    """Scenario text as Markdown shows it: a backslash (JSON's escaped slash, <\\/tool_call>) stays visible."""
    return data_text.replace("\\", "\\\\")


def step_through(walked, at, key: str, refused: bool = False, sample=None, allowed=None) -> None:
    """The turn token by token in the step view, with lesson 6's allowed count under each; `at` is the token discussed."""
    shown = None
    if sample and allowed is not None:
        more = f" (the first {len(sample)} of {allowed:,})" if allowed > len(sample) else ""
        shown = Sample(f"The allowed tokens at that step{more}:", [show_token(t) for t in sample])
    step_view(walk_run(walked, at, REAL_VOCAB, "The grammar refuses this token." if refused else "", shown), key=key)
    st.caption(
        f"Under each token: how many of the {REAL_VOCAB:,} tokens the grammar allowed at that step (all: nothing "
        "restricted)" + ("; ✗ marks the token it refused." if refused else ".")
    )


def draw_naive(naive) -> None:
    """What the first-block-only parser found: one call, or why none."""
    if naive.name is not None:
        args = naive.arguments if isinstance(naive.arguments, dict) else {}
        st.info(f"finds one call: `{call_words(str(naive.name), args)}`")
    else:
        st.error(f"finds no call: {naive.error}")
    if naive.dropped:
        st.error(
            f"never looks at the other {naive.dropped} block{'s' if naive.dropped > 1 else ''}: "
            f"{naive.blocks_seen} were written, 1 is read"
        )


def draw_verdict(policy: str, verdict, run) -> None:
    """One policy's reading of the failing turn, and where the whole run ended."""
    st.markdown(f"**{policy}**")
    draw_reading(verdict)
    if verdict.final and not verdict.returned_as_text:
        st.info("no call in this reply: it is the answer")
    totals = run.ledger.totals()
    calls = len(run.calls)
    # input and output named apart: the cost section below counts both, and the two must read as one figure
    st.markdown(
        f"The whole run: **{calls} call{'s' if calls != 1 else ''}**, {totals['input_tokens']:,} input and "
        f"{totals['output_tokens']:,} output tokens ({totals['tokens']:,} in all); it ended with *{run.stop_reason}*."
    )


def draw_schema_cost(cost) -> None:
    columns = st.columns(2)
    columns[0].metric("Prompt with the tools", f"{cost.with_tools[0]:,}", help="tokens, call 1")
    columns[1].metric("Prompt without them", f"{cost.without_tools[0]:,}", help="tokens, call 1")
    each = f" ({' + '.join(str(n) for n in cost.tools_tokens)})" if cost.calls > 1 else ""
    st.markdown(
        f"Paid for tools the model may not use: **{cost.wasted:,} tokens** over the run's {cost.calls} "
        f"call{'s' if cost.calls != 1 else ''}{each}."
    )


def draw_length_cut(cut) -> None:
    columns = st.columns(2)
    columns[0].metric(
        "Tokens written",
        f"{format_count(cut.output_tokens)} of {format_count(cut.limit)}",
        help="the limit cut the reply",
    )
    columns[1].metric(f"Repeated {cut.kind} at the end", cut.repeated)
    st.markdown(
        f"The reply ended with finish `{cut.finish}`: the limit, not the model, stopped it. "
        "The last tokens: " + " ".join(f"`{show_token(t)}`" for t in cut.tail)
    )


def draw_retry_cost(cost) -> None:
    columns = st.columns(2)
    with_budget, without = cost.with_budget, cost.without_budget
    columns[0].metric(
        f"Input and output tokens, budget of {cost.retry_budget}", f"{with_budget['tokens']:,}", help="the whole run"
    )
    columns[1].metric("Input and output tokens, no budget", f"{without['tokens']:,}", help="the whole run")
    st.markdown(
        f"The budget saves **{cost.saved_tokens:,} tokens**. With it the run stops after **{with_budget['calls']} calls** "
        f"(*{cost.stop_with}*); without it, after **{without['calls']}** (*{cost.stop_without}*)."
    )


def draw_malformed_cost(cost) -> None:
    columns = st.columns(2)
    columns[0].metric(
        "Measured", f"{cost.measured_in:,}", help="input tokens of the run with the broken turn, minus without it"
    )
    columns[1].metric("By the formula", f"{cost.formula_in:,}", help="C_bad + (a_bad + e) × n_later")
    st.markdown(f"C_bad + (a_bad + e) × n_later = {cost.formula_text} tokens")


def draw_case_cost(cost: CaseCost) -> None:
    """The figures of a case's cost, drawn the way its kind is measured."""
    draw = {
        "schemas": draw_schema_cost,
        "retries": draw_retry_cost,
        "length": draw_length_cut,
        "malformed": draw_malformed_cost,
    }
    draw[cost.kind](cost.figures)
