"""Lesson 4's figures of one scripted run: its token ledger up to the call shown, the two harness policies side
by side on the broken reply, and what the broken call costs, measured and by the formula."""

from __future__ import annotations

import streamlit as st

from engine.core.call_formats import parse_turn
from engine.core.parse import POLICIES
from engine.harness.loop import Run, Scenario
from engine.teaching.cost import MalformedCost
from ui.chart_words import chart_caption
from ui.charts import ledger_figure
from ui.draw import draw_reading
from ui.literal import plural, table_html
from ui.numbers import format_count
from ui.scenario_runs import scripted_run


def draw_ledger(run: Run, number: int) -> None:
    """The ledger's first `number` calls as a table and a chart, the chart's axes fixed to the whole run."""
    calls = run.ledger.calls
    rows = [
        {
            "call": n,
            "input": format_count(c.input_tokens),
            "output": format_count(c.output_tokens),
            "tools run": ", ".join(t["name"] for t in c.tool_calls) or "—",
            "errors": len(c.errors),
        }
        for n, c in enumerate(calls[:number], start=1)
    ]
    chart, table = st.columns([1, 1])
    with table:
        st.markdown(table_html(rows), unsafe_allow_html=True)
        so_far = sum(c.input_tokens for c in calls[:number])
        st.metric("Input tokens so far", f"{so_far:,}", help="the sum of every prompt sent up to this call")
    with chart:
        figure = ledger_figure(calls[:number], 340)
        # (stepping through the run, the axes stay put: the whole run's calls and its largest prompt)
        figure.update_layout(
            xaxis={"range": [0.5, len(run.calls) + 0.5]},
            yaxis={"range": [0, max(c.input_tokens for c in calls) * 1.1]},
        )
        st.plotly_chart(figure, key="check_run_return_ledger_chart")
        chart_caption(figure, "call {}")


def draw_policies(scenario: Scenario, chosen_style: str, bad_index: int) -> None:
    """Reply `bad_index` of the script read under each policy, a column each, with the whole run each policy makes."""
    bad_text = scenario.script(chosen_style)[bad_index].text
    for column, name in zip(st.columns(2), POLICIES, strict=True):
        with column:
            st.subheader(name)
            draw_reading(parse_turn(bad_text, scenario.tools, chosen_style, name))
            whole = scripted_run(scenario.name, chosen_style, name)
            st.markdown(
                f"Reply {bad_index + 1} of the script. The whole run: **{plural(len(whole.calls), 'call')}**, "
                f"{whole.ledger.input_tokens:,} input tokens; it ended with *{whole.stop_reason}*."
            )


def draw_stopped_and_forgiving(stopped: Run, forgiving: Run) -> None:
    """The run the vllm policy stopped at a broken reply beside the per-block run: each one's input tokens."""
    a, b = st.columns(2)
    for column, label, run in ((a, "vllm", stopped), (b, "per-block", forgiving)):
        column.metric(
            f"{label}: input tokens, whole run",
            f"{run.ledger.input_tokens:,}",
            help=f"{plural(len(run.calls), 'call')}; ended: {run.stop_reason}",
        )


def draw_measured_and_formula(cost: MalformedCost) -> None:
    """The broken call's extra input tokens twice: measured (with it − without it) and by the formula, and whether
    the two agree."""
    st.latex(r"\Delta_{\text{in}} = C_{\text{bad}} + (a_{\text{bad}} + e)\times n_{\text{later}}")
    measured, equal, formula = st.columns([5, 2, 5])
    with measured:
        st.metric("Measured: input with it − input without it", f"{cost.measured_in:,}")
        st.markdown(
            f"{cost.with_bad['input_tokens']:,} − {cost.without_bad['input_tokens']:,} = **{cost.measured_in:,}** tokens"
        )
    with equal:
        mark = "= ✓" if cost.agrees else "≠"
        st.markdown(f'<div class="equal">{mark}</div>', unsafe_allow_html=True)
        st.caption("equal" if cost.agrees else "not equal")
    with formula:
        st.metric("Formula: C_bad + (a_bad + e) × n_later", f"{cost.formula_in:,}")
        st.markdown(f"{cost.formula_text} tokens")
