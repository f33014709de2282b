"""The token-cost calculator: exact token counts per call and for a whole run, for any tool definitions."""

import plotly.graph_objects as go
import streamlit as st

from engine.core.call_formats import family_formats, get_format, other_lesson_format
from engine.errors import BadInput
from engine.harness.loop import load_scenario
from engine.teaching.calculator import measure_family_tools_cost, measure_tools_cost, plan_run
from ui.chart_words import chart_caption
from ui.charts import chart_layout
from ui.draw import notice
from ui.elsewhere import same_tools_elsewhere
from ui.glossary import show_intro
from ui.literal import table_html
from ui.numbers import format_count
from ui.palette import ink
from ui.sections import scene, screen_size
from ui.state import from_url, style, to_url
from ui.tool_editor import read_editor_tools, tool_editor
from ui.words import lesson

text = lesson("calculator")
st.title(text["title"])
show_intro("calculator", text["intro"])


def run_settings() -> tuple[int, int, str]:
    """The run's three settings side by side, above the chart they shape (a link's values first)."""
    from_url("calculator_calls", "calls", 3, int, range(0, 31))
    from_url("calculator_bad", "bad", 1, int, range(0, 11))
    from_url("calculator_place", "place", "start", str, ("start", "end"))
    first, second, third = st.columns([2, 2, 3])
    calls = first.slider("Tool calls that succeed", 0, 30, key="calculator_calls")
    bad = second.slider("Malformed calls", 0, 10, key="calculator_bad")
    place = third.radio(
        "Where the malformed calls happen",
        ("start", "end"),
        key="calculator_place",
        horizontal=True,
        format_func=lambda p: {"start": "early in the run", "end": "late in the run"}[p],
    )
    to_url(calls=calls, bad=bad, place=place)
    return calls, bad, place


def draw_each_call(run, height: int) -> None:
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


def usable(tools, calls: int, bad: int) -> str | None:
    """Why no run can be drawn for these tools and settings, or None."""
    if tools is None:
        return "Fix the tool definitions to see the costs; your text is kept as it is."
    if not tools and (calls or bad):
        return "Add at least one tool to make calls."
    return None


def plan_runs(tools, calls: int, bad: int, place: str):
    """This run, the same run in the other style, and the run without its malformed calls."""
    return (
        plan_run(tools, style(), calls=calls, malformed=bad, place=place),
        plan_run(tools, other_lesson_format(style()), calls=calls, malformed=bad, place=place),
        plan_run(tools, style(), calls=calls, malformed=0),
    )


# -- the chart first (the key visual), from the tools the editor below holds and the three settings above it ------
calls, bad, place = run_settings()
first_tools, _ = read_editor_tools("calculator")
planned = plan_runs(first_tools, calls, bad, place) if usable(first_tools, calls, bad) is None else None
if planned is not None:
    draw_each_call(planned[0], screen_size(420, 330))
else:
    st.info(usable(first_tools, calls, bad) + " " + text["tools below"])

scene("Your tools")
left, right = st.columns([3, 2], gap="large")
with left:
    tools, problems = tool_editor("calculator", height=screen_size(360, 300))
with right:
    for problem in problems:
        st.error(problem)
    st.caption(f"Style: {get_format(style()).label} (switch it in the sidebar)")
    # the families by the format their maker trained them on; the first is the site's own (Qwen3), so no second price
    families = {f.family: f for f in family_formats()}
    home = next(iter(families))
    family = from_url("calculator_family", "family", home, str, tuple(families))
    st.selectbox(
        "Also price the tools in",
        tuple(families),
        key="calculator_family",
        format_func=lambda n: families[n].display_family,
    )
    to_url(family=None if family == home else family)
    with st.expander("How the run is built"):
        st.markdown(text["how the run is built"])


def draw_run(tools) -> None:
    """Everything that needs a run of these tools: its figures, each call, the same tools elsewhere."""
    # the runs the chart drew, unless the editor below now holds other tools
    run, other, clean = planned if tools == first_tools and planned else plan_runs(tools, calls, bad, place)
    totals = run.totals()

    scene("The run")
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
        f"Same run in {get_format(other_lesson_format(style())).noun} style",
        f"{other.input_tokens:,}",
        help="input tokens",
    )
    cols[1].metric("Extra input from the malformed calls", f"{run.input_tokens - clean.input_tokens:,}")
    if tools:
        per_call = measure_tools_cost(tools, style())
        st.markdown(
            text["tools cost per call"].format(
                total=format_count(per_call.total),
                definitions=format_count(per_call.definitions),
                instructions=format_count(per_call.instructions),
                calls=totals["calls"],
            )
        )
        if family != home:
            try:
                there = measure_family_tools_cost(tools, family)
            except (
                BadInput
            ) as refused:  # that family cannot price these tools: say why, the rest of the page still drawn
                st.warning(str(refused))
                there = None
            if there is not None:
                st.markdown(
                    text["in another family"].format(
                        family=families[family].display_family,
                        total=format_count(there.total),
                        definitions=format_count(there.definitions),
                        instructions=format_count(there.instructions),
                        calls=totals["calls"],
                        run_total=there.total * totals["calls"],
                    )
                )

    scene("The calls, one by one", heading=None)
    st.markdown(
        table_html(
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
        ),
        unsafe_allow_html=True,
    )

    scene("The same tools elsewhere", heading=None)
    # -- the same tools elsewhere: OpenAI's published estimate beside Qwen3's counts, Anthropic's quoted overhead
    same_tools_elsewhere(tools, load_scenario("strawberry").messages)


# (tools that cannot make a run: why, and the rest of the page is not drawn; the page still ends normally,
# so projected its section bar is drawn)
if usable(tools, calls, bad) is not None:
    st.info(usable(tools, calls, bad))
else:
    draw_run(tools)

scene("What to notice", heading=None)
notice(text["what to notice"])
