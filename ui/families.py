"""Lesson 8's figures for each model family, computed once (the families' renderers, tokenizers and grammars are
slow to load): what a tool set costs in each, the same call as each writes it, what each grammar allows at the tool's
name, a family's rendered prompt; and the chart that compares the prices."""

from __future__ import annotations

import html

import plotly.graph_objects as go
import streamlit as st

from engine.core.call_formats import call_tokens, family_formats, parse_turn, price_tools, render_tokens
from engine.core.tooldefs import load_tool_set
from ui.charts import chart_layout
from ui.literal import table_html
from ui.palette import ink

ARGUMENTS = {"word": "strawberry", "letter": "r"}  # the lesson's call, count_letter's arguments
QUESTION = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]
FAMILIES = {f.family: f for f in family_formats()}  # family -> the format its maker trained it on, in order


@st.cache_data(show_spinner="Rendering the tools in each family…", max_entries=8)
def prices(tool_set: str) -> dict:
    """What the tool set adds to the prompt in each family (definitions and the template's instructions)."""
    tools = load_tool_set(tool_set)
    return {name: price_tools(f.name, QUESTION, tools) for name, f in FAMILIES.items()}


@st.cache_data(show_spinner=False, max_entries=8)
def written_call(name: str) -> tuple[list[int], list[str], list[bool], int, list[str]]:
    """The lesson's call as the family writes it: ids, tokens, which are special, and how its parser reads it back
    (the calls it found, its errors)."""
    family = FAMILIES[name]
    turn, ids, tokens = call_tokens(family.name, "count_letter", ARGUMENTS)
    verdict = parse_turn(turn, load_tool_set("strawberry"), family.name)
    return ids, tokens, [family.is_special(i) for i in ids], len(verdict.calls), [e.error for e in verdict.errors]


@st.cache_data(show_spinner="Building each family's grammar…", max_entries=2)
def allowed_at_names() -> dict[str, tuple[int, int]]:
    """For each family, how many tokens its grammar allows at the tool's name, of its vocabulary."""
    from engine.constrain.families import allowed_at_name

    tools = load_tool_set("strawberry")
    return {name: (m.allowed, m.vocab) for name, f in FAMILIES.items() for m in [allowed_at_name(f.name, tools)]}


@st.cache_data(show_spinner="Rendering the prompt…", max_entries=8)
def rendering(name: str):
    """The lesson's question and tools rendered as the family's prompt, with its spans."""
    return render_tokens(FAMILIES[name].name, QUESTION, load_tool_set("strawberry"))


def draw_prices(tool_set: str, key: str, how_counted: str) -> None:
    """Stacked bars per family, definitions then the template's instructions, with the numbers behind an expander
    (`how_counted`: the lesson's words above them)."""
    priced = prices(tool_set)
    labels = [FAMILIES[n].display_family for n in priced]
    parts = (("definitions", "definitions", "tools"), ("template's instructions", "instructions", "template"))
    figure = go.Figure(
        [
            go.Bar(
                name=name,
                y=labels,
                x=[getattr(p, field) for p in priced.values()],
                orientation="h",
                marker_color=ink(kind),
            )
            for name, field, kind in parts
        ]
    )
    # each family's whole price at the end of its bar
    figure.data[-1].update(text=[f"{p.total:,}" for p in priced.values()], textposition="outside")
    chart_layout(
        figure,
        260,
        barmode="stack",
        xaxis_title="tokens the tools add",
        # every family named (plotly drops every other category label when the rows are this close)
        yaxis={"autorange": "reversed", "tickmode": "linear", "dtick": 1, "tickfont": {"size": 12}},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0},
    )
    figure.update_layout(margin_t=34)  # room above the bars for the legend, which would cover the first bar
    st.plotly_chart(figure, key=key)
    with st.expander("The numbers, and how they are counted"):
        st.markdown(how_counted)
        st.markdown(
            table_html(
                [
                    {
                        "Family": FAMILIES[n].display_family,
                        "Tools cost": f"{p.total:,}",
                        "Definitions": f"{p.definitions:,}",
                        "Template's instructions": f"{p.instructions:,}",
                    }
                    for n, p in priced.items()
                ]
            ),
            unsafe_allow_html=True,
        )


def spans_html(prompt) -> str:
    """The rendered prompt's text, each span coloured by its kind, its label and token count on hover."""
    parts = [
        f'<span class="k-{s.kind}" title="{html.escape(s.label)}: {s.tokens} tokens">'
        f"{html.escape(prompt.text[s.start : s.end])}</span>"
        for s in prompt.spans
    ]
    return f'<div class="prompt-view">{"".join(parts)}</div>'
