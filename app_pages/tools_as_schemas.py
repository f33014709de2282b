"""Lesson 2: tools are JSON schemas pasted into the prompt, paid for in tokens on every call."""

import html

import plotly.graph_objects as go
import streamlit as st
from plotly.colors import qualitative

from engine.core.call_formats import get_format, lesson_formats, other_lesson_format
from engine.core.prompt import Request, render
from engine.harness.loop import load_scenario
from engine.teaching.calculator import measure_tools_cost
from ui.chart_words import chart_caption
from ui.charts import chart_layout
from ui.draw import notice, prompt_html
from ui.glossary import show_intro
from ui.literal import plural
from ui.numbers import format_count
from ui.sections import scene, screen_size
from ui.state import STYLE_NAMES, from_url, style, style_button, to_url
from ui.tool_editor import read_editor_tools, tool_editor
from ui.understanding import check_understanding
from ui.words import lesson

EMPTY_THINK = "<think>\n\n</think>\n\n"

text = lesson("tools-as-schemas")
st.title(text["title"])
show_intro("tools-as-schemas", text["intro"])
messages = load_scenario("strawberry").messages

# the tools as the editor holds them now: the prompt they make is drawn first (the lesson's key visual), the editor below
tools, _ = read_editor_tools("tools_as_schemas")
if tools is None:
    tools = st.session_state.get("tools_as_schemas_last_good", [])
else:
    st.session_state["tools_as_schemas_last_good"] = tools
costs = {
    name: (render(Request(messages, tools, name)).count, measure_tools_cost(tools, name, messages))
    for name in STYLE_NAMES
}


def coloured_parts_html(spans) -> str:
    """The prompt's parts and their token counts, each in its colour in the prompt: the legend and the table in one."""
    parts = "".join(
        f'<span class="k-{s.kind}">{html.escape(s.label)} · <b>{format_count(s.tokens)}</b></span>' for s in spans
    )
    return f'<div class="legend parts">{parts}</div>'


# -- the prompt as the model sees it --------------------------------------------------------------------
st.header("The prompt")
st.markdown(text["the prompt"])
prompt = render(Request(messages, tools, style()))
# one screen, on a projector and a laptop alike: the prompt beside its parts (coloured: the table is the legend)
view, table = st.columns([5, 2], gap="medium")
table.metric("Tokens in this prompt", format_count(prompt.count))
table.caption(f"Shown: the {get_format(style()).noun} prompt.")
table.markdown(coloured_parts_html(prompt.spans), unsafe_allow_html=True)
from_url("tools_as_schemas_tokens", "tokens", False, lambda v: v == "1")
by_token = table.toggle("Every token", key="tools_as_schemas_tokens", help="Each token's boundaries and its id")
view = view.container(key="tools_as_schemas_prompt")  # a shorter box on a projector (ui/presenter.css)
to_url(tokens="1" if by_token else None)
view.markdown(prompt_html(prompt, by_token), unsafe_allow_html=True)
if prompt.text.endswith(EMPTY_THINK):
    scene("The empty think", heading=None)
    st.container(key="tools_as_schemas_whole_think").markdown(
        text["empty think"]
    )  # a screen of its own: every word shown

# -- edit the tools, with the costs beside them ------------------------------------------------------
scene("Edit the tools")
st.markdown(text["edit the tools"])
left, right = st.columns([3, 2], gap="large")
with left:
    problems = tool_editor("tools_as_schemas", height=screen_size(420, 240))[1]
with right:
    for problem in problems:
        st.error(problem)
    if problems:
        st.caption("The counts below are for the last tools that had no problems.")
    st.subheader("Costs")
    st.markdown(text["costs"])
    for column, name in zip(st.columns(len(STYLE_NAMES)), STYLE_NAMES, strict=True):
        prompt_tokens, tools_tokens = costs[name]
        column.metric(f"{get_format(name).label}: prompt tokens", format_count(prompt_tokens))
        column.metric(f"{get_format(name).label}: tools cost", format_count(tools_tokens.total))

# what the figures are made of, under the editor (projected, a screen of its own: beside the editor it was cut)
scene("What the tools cost", level="subheader")
shown = costs[style()][1]
# a format only the prompt asks for (ReAct) is said to be a different format, never set beside the maker's own figure as the same measure
figure = "tools cost figure" if get_format(style()).maker_format else "tools cost figure react"
makers = next(f.name for f in lesson_formats() if f.maker_format)
st.markdown(
    text[figure].format(count=len(tools), tokens=format_count(shown.total), native=format_count(costs[makers][1].total))
)
st.markdown(
    text["tools cost parts"].format(
        tokens=format_count(shown.total),
        definitions=format_count(shown.definitions),
        instructions=format_count(shown.instructions),
    )
)
other = other_lesson_format(style())
style_button(f"Switch to the {get_format(other).noun} prompt", other, key="tools_as_schemas_switch")

# -- over a run -----------------------------------------------------------------------------------------
scene("Over a run")
st.markdown(text["over a run"])
from_url("tools_as_schemas_calls", "calls", 5, int, range(1, 21))
calls = st.slider("Number of calls in the run", 1, 20, key="tools_as_schemas_calls")
to_url(calls=calls)
figure = go.Figure()
# one colour per format, as many as there are formats (plotly's D3 sequence, repeated past its ten)
for index, name in enumerate(STYLE_NAMES):
    colour = qualitative.D3[index % len(qualitative.D3)]
    per_call = costs[name][1].total
    figure.add_bar(
        x=list(range(1, calls + 1)),
        y=[per_call * k for k in range(1, calls + 1)],
        name=get_format(name).label,
        marker_color=colour,
    )
chart_layout(
    figure,
    screen_size(360, 220),
    barmode="group",
    xaxis_title="after this many calls",
    yaxis_title="tokens spent on the tools",
    legend={"orientation": "h"},
)

st.plotly_chart(figure, width="stretch")
chart_caption(figure, "after {} calls")
for column, name in zip(st.columns(len(STYLE_NAMES)), STYLE_NAMES, strict=True):
    column.metric(
        f"{get_format(name).label}: tools cost over {plural(calls, 'call')}", format_count(costs[name][1].total * calls)
    )

scene("What to notice", heading=None)
notice(text["what to notice"])
check_understanding("tools-as-schemas", tools=tools)
