"""How the token-cost calculator draws a planned run (engine.teaching.calculator_runs): each call's prompt as stacked
bars, the run's figures, its calls one by one, and the tools priced in another family."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from engine.core.call_formats import get_format, other_lesson_format
from engine.errors import BadInput
from engine.teaching.calculator import RunCost, ToolsCost, measure_family_tools_cost
from engine.teaching.calculator_runs import CalculatorRuns
from ui.chart_words import chart_caption
from ui.charts import chart_layout
from ui.literal import table_html
from ui.numbers import format_count
from ui.palette import ink


def draw_each_call(run: RunCost, height: int) -> None:
    """The stacked bars: each call's whole prompt, the tool definitions re-sent in every one."""
    figure = go.Figure()
    x = [f"{c.number}. {c.kind}" for c in run.calls]
    for field, label, colour in (
        ("tools_tokens", "tool definitions", ink("tools")),
        ("template_tokens", "the template's tool instructions", ink("template")),
        ("conversation_tokens", "conversation so far", ink("conversation")),
    ):
        figure.add_bar(x=x, y=[getattr(c, field) for c in run.calls], name=label, marker_color=colour)
    # (the legend under the calls' names, not over them)
    chart_layout(
        figure,
        height,
        "Input tokens of each call (the whole prompt, re-sent)",
        barmode="stack",
        yaxis_title="tokens",
        legend={"orientation": "h", "yanchor": "top", "y": -0.14},
    )
    figure.update_layout(margin_b=50)
    st.plotly_chart(figure, width="stretch", key="calculator_each_call_chart")
    chart_caption(figure)


def draw_run_figures(runs: CalculatorRuns, style: str) -> None:
    """The whole run's figures, two rows of metrics: calls and tokens, then the other style and the malformed calls."""
    totals = runs.run.totals()
    cols = st.columns(4)
    cols[0].metric("Model calls", totals["calls"])
    cols[1].metric("Input tokens, whole run", f"{totals['input_tokens']:,}")
    cols[2].metric(
        "of which the tools cost",
        f"{totals['tools_cost']:,}",
        help="Definitions plus the template's instructions around them, on every call.",
    )
    cols[3].metric("Output tokens", f"{totals['output_tokens']:,}")
    cols = st.columns(4)
    cols[0].metric(
        f"Same run in {get_format(other_lesson_format(style)).noun} style",
        f"{runs.other.input_tokens:,}",
        help="input tokens",
    )
    cols[1].metric("Extra input from the malformed calls", f"{runs.run.input_tokens - runs.clean.input_tokens:,}")


def calls_html(run: RunCost) -> str:
    """The run's calls one by one as a table: what the model writes, what each prompt and its tools cost."""
    return table_html(
        [
            {
                "call": c.number,
                "what the model writes": c.kind,
                "input tokens": format_count(c.input_tokens),
                "tools cost": format_count(c.tools_cost),
                "of which definitions": format_count(c.tools_tokens),
                "output tokens": format_count(c.output_tokens),
                "error sent back": c.error or "",
            }
            for c in run.calls
        ]
    )


def priced_in_family(tools: list[dict], family: str) -> ToolsCost | None:
    """The tools priced in another family, or None when it cannot price them (a warning says why; the rest of the
    page is still drawn)."""
    try:
        return measure_family_tools_cost(tools, family)
    except BadInput as refused:
        st.warning(str(refused))
        return None
