"""Lesson 8: the same tools and the same call in each model family, with its own tokenizer, renderer and parsers."""

import html

import plotly.graph_objects as go
import streamlit as st

from engine.core.call_formats import (
    call_tokens,
    constrained_format,
    family_formats,
    parse_turn,
    price_tools,
    render_tokens,
)
from engine.core.call_formats.policies import policy_differences
from engine.core.tooldefs import load_tool_set
from engine.teaching.quiz import figure_the_model_writes_a_call
from ui.charts import chart_layout
from ui.draw import notice, token_strip
from ui.glossary import show_intro
from ui.literal import table_html
from ui.numbers import format_count
from ui.palette import ink
from ui.sections import scene
from ui.state import from_url, to_url
from ui.understanding import check_understanding
from ui.words import lesson, words

ID = "other-model-families"
ARGUMENTS = {"word": "strawberry", "letter": "r"}
QUESTION = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]

FAMILIES = {f.family: f for f in family_formats()}  # family -> the format its maker trained it on, in order
text = lesson(ID)
st.title(text["title"])
show_intro(ID, text["intro"])


@st.cache_data(show_spinner="Rendering the tools in each family…", max_entries=8)
def prices(tool_set: str) -> dict:
    tools = load_tool_set(tool_set)
    return {name: price_tools(f.name, QUESTION, tools) for name, f in FAMILIES.items()}


@st.cache_data(show_spinner=False, max_entries=8)
def written_call(name: str) -> tuple[list[int], list[str], list[bool], int, list[str]]:
    family = FAMILIES[name]
    turn, ids, tokens = call_tokens(family.name, "count_letter", ARGUMENTS)
    verdict = parse_turn(turn, load_tool_set("strawberry"), family.name)
    return ids, tokens, [family.is_special(i) for i in ids], len(verdict.calls), [e.error for e in verdict.errors]


@st.cache_data(show_spinner="Building each family's grammar…", max_entries=2)
def allowed_at_names() -> dict[str, tuple[int, int]]:
    from engine.constrain.families import allowed_at_name

    tools = load_tool_set("strawberry")
    return {name: (m.allowed, m.vocab) for name, f in FAMILIES.items() for m in [allowed_at_name(f.name, tools)]}


@st.cache_data(show_spinner="Rendering the prompt…", max_entries=8)
def rendering(name: str):
    return render_tokens(FAMILIES[name].name, QUESTION, load_tool_set("strawberry"))


def draw_prices(tool_set: str, key: str) -> None:
    """Stacked bars per family, definitions then the template's instructions, with the numbers behind an expander."""
    priced = prices(tool_set)
    labels = [FAMILIES[n].display_family for n in priced]
    figure = go.Figure(
        [
            go.Bar(
                name="definitions",
                y=labels,
                x=[p.definitions for p in priced.values()],
                orientation="h",
                marker_color=ink("tools"),
            ),
            go.Bar(
                name="template's instructions",
                y=labels,
                x=[p.instructions for p in priced.values()],
                orientation="h",
                marker_color=ink("template"),
                text=[f"{p.total:,}" for p in priced.values()],
                textposition="outside",
            ),
        ]
    )
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
        st.markdown(text["how the price is counted"])
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


# the key visual first: the same two tools priced in each family (presenter mode's first screen)
st.header("What two tools cost")
strawberry = prices("strawberry")
st.markdown(
    words(
        ID,
        "what the tools cost",
        qwen3=strawberry["qwen3"].total,
        llama=strawberry["llama3.1"].total,
        gpt_oss=strawberry["gpt-oss"].total,
        coder=strawberry["qwen3-coder"].total,
    )
)
draw_prices("strawberry", "other_model_families_two_chart")

scene("The families")
st.markdown(text["the families"])
with st.expander("Who renders each prompt"):
    st.markdown(text["who renders each"])
    st.markdown(
        table_html(
            [
                {
                    "Family": f.display_family,
                    "Rendered by": f.renderer,
                    "Read back as": f.parser_reference,
                    "Its opener": f.opener.note,
                }
                for f in FAMILIES.values()
            ]
        ),
        unsafe_allow_html=True,
    )

scene("What twelve tools cost")
st.markdown(text["twelve tools"])
draw_prices("coding-agent", "other_model_families_twelve_chart")

scene("The same call", "The same call in each family")
# lesson 3 counts the same call with the <|im_end|> that ends its turn: both figures from the engine
st.markdown(
    words(
        ID,
        "the same call",
        qwen_call=format_count(len(written_call(constrained_format().family)[0])),
        with_end=format_count(figure_the_model_writes_a_call(constrained_format().name).call_tokens),
    )
)
for tab, name in zip(st.tabs([f.display_family for f in FAMILIES.values()]), FAMILIES, strict=True):
    with tab:
        ids, tokens, special, calls, errors = written_call(name)
        # no ids under the boxes: five strips of a call each fit a projector's screen that way
        st.markdown(
            token_strip(list(zip(ids, tokens, strict=True)), show_ids=False, special=special), unsafe_allow_html=True
        )
        verdict = "one valid call" if calls == 1 and not errors else f"{calls} calls, errors: {'; '.join(errors)}"
        st.caption(
            f"{format_count(len(ids))} tokens · read back as the {FAMILIES[name].parser_reference} reads it: {verdict}"
        )

scene("The opener")
st.markdown(text["the opener"])
at_name = allowed_at_names()
st.markdown(
    table_html(
        [
            {
                "Family": f.display_family,
                "Opener": f.opener.text or f.opener.note,
                "Allowed at the name": f"{at_name[n][0]} of {at_name[n][1]:,}",
            }
            for n, f in FAMILIES.items()
        ]
    ),
    unsafe_allow_html=True,
)

scene("Where the tools go")
names = list(FAMILIES)
# it opens on the first family the other lessons do not show (their own family's prompt is lesson 2's)
first_other = next(n for n, f in FAMILIES.items() if not f.in_lessons)
shown = from_url("other_model_families_family", "family", first_other, str, names)
st.selectbox("Family", names, key="other_model_families_family", format_func=lambda n: FAMILIES[n].display_family)
to_url(family=None if shown == first_other else shown)
prompt = rendering(shown)
parts = [
    f'<span class="k-{s.kind}" title="{html.escape(s.label)}: {s.tokens} tokens">'
    f"{html.escape(prompt.text[s.start : s.end])}</span>"
    for s in prompt.spans
]
with st.container(height=200):
    st.markdown(f'<div class="prompt-view">{"".join(parts)}</div>', unsafe_allow_html=True)
st.caption(words(ID, "where the tools go", count=f"{prompt.count:,}"))

scene("Strict and server")
st.markdown(text["strict and server"])
# one tab per family: a family's few turns fit a projected screen whole, where all of them would scroll
differences = policy_differences(load_tool_set("strawberry"))
lenient = list(dict.fromkeys(d.family for d in differences))
policies = st.container(key="other_model_families_policies")  # (projected, in smaller type: ui/presenter.css)
for tab, family in zip(policies.tabs(lenient), lenient, strict=True):
    with tab:
        st.markdown(
            table_html(
                [
                    {"The turn": d.turn, "Strict": d.strict, "Server": f"{d.server} ({d.parser_file})"}
                    for d in differences
                    if d.family == family
                ]
            ),
            unsafe_allow_html=True,
        )

check_understanding(ID)  # a section of its own

# last, so that the "Next lesson" link the router adds below fits on the same screen
scene("What to notice", heading=None)
notice(text["what to notice"])
