"""Lesson 7: the same call in other APIs: one call, its reply and its result in each format (Qwen3, ReAct, OpenAI, Anthropic), and what differs."""

import json

import streamlit as st

from engine.harness.loop import list_gallery, list_scenarios, load_scenario
from ui.draw import notice
from ui.elsewhere import cookbook_check, costs_elsewhere, draw_anthropic, draw_costs
from ui.sections import headline, markdown_in_sections, more, scene
from ui.state import from_url, reset_to, style, to_url
from ui.understanding import check_understanding
from ui.wire_view import (
    differences_screens,
    draw_formats,
    exchanges,
    ordered_formats,
    panes,
    short,
    short_name,
    step_label,
    tool_choice_html,
)
from ui.words import lesson, words

ID = "same-call-in-other-apis"

text = lesson(ID)
st.title(text["title"])

# -- the call ---------------------------------------------------------------------------------------
names = [*list_scenarios(), *list_gallery()]
scenario_name = from_url("same_call_in_other_apis_scenario", "scenario", "strawberry", str, names)
scenario = load_scenario(scenario_name)
chosen_style = style() if style() in scenario.styles else scenario.styles[0]
written = exchanges(scenario_name, chosen_style)
number = from_url("same_call_in_other_apis_step", "step", 0, int, range(len(written)))

# the key visual first, under the title: the pickers on one row (projected, without their labels: ui/presenter.css)
left, right = st.container(key="same_call_in_other_apis_pickers").columns([1, 1])
left.selectbox(
    "Scenario",
    names,
    key="same_call_in_other_apis_scenario",
    on_change=reset_to,
    args=("same_call_in_other_apis_step", 0),
    format_func=lambda n: load_scenario(n).title,
)
right.selectbox(
    "Step of its run",
    range(len(written)),
    key="same_call_in_other_apis_step",
    format_func=lambda i: step_label(written[i]),
)
to_url(scenario=None if scenario_name == "strawberry" else scenario_name, step=number or None)
shown = written[number]
if chosen_style != style():
    st.info(
        f"This scenario is scripted in the {short_name(ordered_formats(chosen_style)[0])} style only, "
        "so its calls come from that script whatever the sidebar says."
    )
with st.container(key="same_call_in_other_apis_formats_view"):
    draw_formats(shown, chosen_style)

scene("The call in each format")
st.markdown(text["intro"])
st.markdown(text["pick a call"])
with st.expander("The sidebar's style, and what does not depend on it"):
    st.markdown(text["the style switch"])
if shown.calls:
    described = "; ".join(
        f"`{c.name}` with `{short(json.dumps(c.arguments, ensure_ascii=False))}`" for c in shown.calls
    )
    st.markdown(f"**The call{'s' if len(shown.calls) > 1 else ''}:** {described}")
else:
    st.markdown(f"**No call: the final answer.** `{shown.answer}`")

scene("The request, the reply, what goes back")
request_words, reply_words, back_words = panes(3)
request_words.markdown("**The request.** " + text["the request"])
reply_words.markdown("**The reply.** " + text["the reply"])
back_words.markdown("**What goes back.** " + text["what goes back"])

# -- what differs ----------------------------------------------------------------------------------------
scene("What differs")
markdown_in_sections(text["what differs"], "What differs", per=2)
for title, table in differences_screens(chosen_style):
    scene(title, heading=None)
    st.markdown(table, unsafe_allow_html=True)
scene("tool_choice in each API", level="subheader")
st.markdown(tool_choice_html(), unsafe_allow_html=True)

# -- what the same tools cost ----------------------------------------------------------------------------------
scene("What the same tools cost elsewhere")
rows = costs_elsewhere(scenario.tools, scenario.messages)
if isinstance(rows, str):
    st.warning(f"No estimate for these tools: {rows}")
else:
    check = cookbook_check()["ours"]
    st.markdown(
        words(
            ID,
            "what the same tools cost elsewhere",
            qwen3_native=rows["Qwen3 native"]["tools_tokens"],
            qwen3_react=rows["Qwen3 ReAct"]["tools_tokens"],
            gpt4o=rows["gpt-4o"]["tools_tokens"],
            gpt4=rows["gpt-4"]["tools_tokens"],
            cookbook_gpt4o=check["gpt-4o"],
            cookbook_gpt4=check["gpt-4"],
        )
    )
    st.caption(f"The tools of “{scenario.title}” ({len(scenario.tools)} of them) and its opening messages.")
    draw_costs(rows)
scene("Anthropic's hidden system prompt", level="subheader")
headline(text["anthropic, headline"], key="same_call_in_other_apis_anthropic")
more(text["anthropic's hidden system prompt"], key="same_call_in_other_apis_anthropic")
draw_anthropic()

scene("What to notice", heading=None)
notice(text["what to notice"])
check_understanding(ID)
