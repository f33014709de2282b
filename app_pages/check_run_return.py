"""Lesson 4: check it, run it, return it: the block the parser found, each check, the tool run, the result going back."""

import streamlit as st

from engine.core.call_formats import get_format
from engine.core.parse import POLICIES
from engine.harness.loop import list_scenarios, load_scenario, returned_text
from engine.teaching.cost import malformed_cost_of
from ui.chart_words import a_bad_parts
from ui.draw import notice
from ui.glossary import show_intro
from ui.literal import plural
from ui.run_costs import draw_ledger, draw_measured_and_formula, draw_policies, draw_stopped_and_forgiving
from ui.scenario_runs import first_step, open_at_first_step, scripted_run
from ui.sections import scene
from ui.state import from_url, style, style_button, to_url
from ui.understanding import check_understanding
from ui.views.step_data import harness_run
from ui.views.step_view import current_step, step_view
from ui.words import lesson, words

ID = "check-run-return"
# the step view's words for each part of a call (what goes back is the style's own)
STEP_PARTS = (
    "the turn",
    "cut off",
    "returned as text",
    "final turn",
    "the checks",
    "the checks (dropped)",
    "the tool runs",
)

text = lesson(ID)
st.title(text["title"])  # the run itself comes first, under the title: its words follow

# -- the scenario, the style, the policy --------------------------------------------------------
names = list_scenarios()
scenario_name = from_url("check_run_return_scenario", "scenario", "missing-brace", str, names)
scenario = load_scenario(scenario_name)
policy = from_url("check_run_return_policy", "policy", "per-block", str, POLICIES)
chosen_style = style()

# the two pickers on one line (projected, without their labels: ui/presenter.css; the box names its scenario)
left, right = st.container(key="check_run_return_pickers").columns([3, 2])
left.selectbox(
    "Scenario",
    names,
    key="check_run_return_scenario",
    on_change=open_at_first_step,
    args=("check_run_return_scenario", "check_run_return_step"),
    format_func=lambda n: load_scenario(n).title,
)
right.segmented_control(
    "Harness policy",
    POLICIES,
    key="check_run_return_policy",
    required=True,
    help="per-block runs the good calls of a reply; vllm drops them all when one block is not valid JSON.",
)
# (a scenario this style lacks: only the warning; the page still ends normally, so projected its section bar is drawn)
stopped = False
if chosen_style not in scenario.styles:
    other = scenario.styles[0]
    st.warning(
        words(ID, "only one style", scenario=scenario.title, have=get_format(other).noun, why=text[f"why {other} only"])
    )
    style_button(f"Show it in the {get_format(other).noun} style", other, key="check_run_return_switch_style")
    to_url(scenario=scenario_name, policy=None if policy == "per-block" else policy, step=None)
else:
    run = scripted_run(scenario_name, chosen_style, policy)
    # a link or a policy switch can point past the end of this run: current_step clamps it
    number = current_step("check_run_return_view", "check_run_return_step", len(run.calls), first_step(scenario_name))
    to_url(scenario=scenario_name, policy=None if policy == "per-block" else policy, step=number)
    # the vllm policy stops a run at a broken reply: the lesson's last words then say so
    stopped = any(s.parse.returned_as_text for s in run.calls)

    # -- stepping through the run (in the browser: every call is sent once) ---------------------------
    parts = {k: text[k] for k in STEP_PARTS} | {"what goes back": text[f"what goes back ({chosen_style})"]}
    stepped = harness_run(run, parts, lambda n: returned_text(run, n, scenario.tools), number)
    step_view(stepped, key="check_run_return_view")

    # the lesson's opening words and the scenario's story, after the run they explain
    scene("The harness and this run")
    with st.container(key="check_run_return_whole_story"):  # (every line shown: these words are the section)
        show_intro(ID, text["intro"])
        st.markdown(text["scenario"])
        st.markdown(f"**{scenario.summary}** {scenario.lesson}")

    scene("The token ledger")
    st.markdown(text["the token ledger"])
    draw_ledger(run, number)

    scene("Forgiving or all-or-nothing")
    if not get_format(chosen_style).parallel:  # one call per reply: the two policies cannot differ
        st.markdown(text["policies in react"])
    else:
        st.markdown(text["forgiving or all-or-nothing"])
        draw_policies(
            scenario, chosen_style, number - 1 if scenario.malformed_turn is None else scenario.malformed_turn
        )

    scene("What a broken call costs")
    if scenario.malformed_turn is None:
        st.markdown(text["no broken call"])
    elif stopped:  # the vllm policy stopped this run at the broken reply: show that run, not the per-block one
        forgiving = scripted_run(scenario_name, chosen_style, "per-block")
        st.markdown(
            words(
                ID,
                "cost when the run stopped",
                stopped=next(n for n, s in enumerate(run.calls, start=1) if s.parse.returned_as_text),
                calls=plural(len(run.calls), "call"),
                tokens=f"{run.ledger.input_tokens:,}",
                forgiving_calls=plural(len(forgiving.calls), "call"),
                forgiving_tokens=f"{forgiving.ledger.input_tokens:,}",
            )
        )
        draw_stopped_and_forgiving(run, forgiving)
    else:
        st.markdown(text["what a broken call costs"])
        cost = malformed_cost_of(scenario_name, chosen_style)
        draw_measured_and_formula(cost)
        scene("The formula's terms", heading=None)
        terms = {"c_bad": cost.c_bad, "a_bad": cost.a_bad, "e": cost.e, "n_later": cost.n_later}
        st.markdown(words(ID, "the terms", **terms, a_bad_parts=a_bad_parts(cost, ID)))
        st.caption(text["reported elsewhere"])

scene("What to notice", heading=None)
notice(text["what to notice (stopped)" if stopped else "what to notice"])
check_understanding(ID)
