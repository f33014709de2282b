"""The token-cost calculator: exact token counts per call and for a whole run, for any tool definitions."""

import streamlit as st

from engine.core.call_formats import family_formats, get_format
from engine.harness.loop import load_scenario
from engine.teaching.calculator import measure_tools_cost
from engine.teaching.calculator_runs import plan_runs, why_no_run
from ui.calculator_view import calls_html, draw_each_call, draw_run_figures, priced_in_family
from ui.draw import notice
from ui.elsewhere import same_tools_elsewhere
from ui.glossary import show_intro
from ui.numbers import format_count
from ui.sections import scene, screen_size
from ui.state import from_url, style, to_url
from ui.tool_editor import read_editor_tools, tool_editor
from ui.words import lesson

text = lesson("calculator")
st.title(text["title"])
show_intro("calculator", text["intro"])

# -- the chart first (the key visual), from the tools the editor below holds and the three settings above it ------
# the run's three settings side by side, above the chart they shape (a link's values first)
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
first_tools, _ = read_editor_tools("calculator")
planned = None if why_no_run(first_tools, calls, bad) else plan_runs(first_tools, style(), calls, bad, place)
if planned is not None:
    draw_each_call(planned.run, screen_size(420, 330))
else:
    st.info(why_no_run(first_tools, calls, bad) + " " + text["tools below"])

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

# (tools that cannot make a run: why, and the rest of the page is not drawn; the page still ends normally,
# so projected its section bar is drawn)
if why_no_run(tools, calls, bad) is not None:
    st.info(why_no_run(tools, calls, bad))
else:
    # the runs the chart drew, unless the editor below now holds other tools
    runs = planned if tools == first_tools and planned else plan_runs(tools, style(), calls, bad, place)
    scene("The run")
    draw_run_figures(runs, style())
    if tools:
        per_call = measure_tools_cost(tools, style())
        calls_made = runs.run.totals()["calls"]
        st.markdown(
            text["tools cost per call"].format(
                total=format_count(per_call.total),
                definitions=format_count(per_call.definitions),
                instructions=format_count(per_call.instructions),
                calls=calls_made,
            )
        )
        there = priced_in_family(tools, family) if family != home else None
        if there is not None:
            st.markdown(
                text["in another family"].format(
                    family=families[family].display_family,
                    total=format_count(there.total),
                    definitions=format_count(there.definitions),
                    instructions=format_count(there.instructions),
                    calls=calls_made,
                    run_total=there.total * calls_made,
                )
            )

    scene("The calls, one by one", heading=None)
    st.markdown(calls_html(runs.run), unsafe_allow_html=True)

    scene("The same tools elsewhere", heading=None)
    # OpenAI's published estimate beside Qwen3's counts, Anthropic's quoted overhead
    same_tools_elsewhere(tools, load_scenario("strawberry").messages)

scene("What to notice", heading=None)
notice(text["what to notice"])
