"""Harness playground: a whole episode, scripted or live, on an editable sandboxed workspace."""

import json

import streamlit as st

from engine.harness.loop import list_scenarios, load_scenario
from engine.harness.playground import check_files
from engine.teaching.panels import find_panel
from ui.draw import notice
from ui.glossary import show_intro
from ui.models import draw_source, panel_source
from ui.playground_files import (
    LINK_PROBLEM,
    draw_call,
    draw_files_after,
    draw_ledger,
    draw_workspace,
    load_files,
    load_linked_files,
    workspace_entries,
)
from ui.playground_run import run_episode
from ui.sections import more, scene
from ui.state import edits_to_url, from_url, style, to_url
from ui.views.loop_view import loop_view, run_end, run_frames
from ui.words import lesson

ID = "playground"

text = lesson(ID)
st.title(text["title"])
# the one idea in a sentence; the words that explain it are for a learner reading alone
show_intro(ID, text["intro"])
more(text["model"], key="playground_model")
chosen_style = style()

# -- scripted or live ---------------------------------------------------------------------------
names = list_scenarios()
scenario_name = from_url("playground_scenario", "scenario", "missing-brace", str, names)
scenario = load_scenario(scenario_name)
if "playground_files" not in st.session_state:
    load_files(scenario_name)
    load_linked_files()
mode = from_url("playground_mode", "mode", "scripted", str, ["scripted", "live"])
to_url(scenario=scenario_name, mode=None if mode == "scripted" else mode)

# the two pickers on one line (projected, without their labels: ui/presenter.css), above the loop picture
left, right = st.container(key="playground_pickers").columns([2, 3])
left.segmented_control("Who writes the turns", ["scripted", "live"], key="playground_mode", required=True)
right.selectbox(
    "Scenario (its files, question and tools)",
    names,
    key="playground_scenario",
    format_func=lambda n: load_scenario(n).title,
    on_change=lambda: load_files(st.session_state["playground_scenario"]),
)

# the live panel's settings, and its recording in a lesson pack when no model is loaded
panel = find_panel(ID, "episode", chosen_style)
source = panel_source(panel) if mode == "live" else None
engine = source.engine if source else None
replay = source.run if source else None
if source is not None:
    draw_source(source, missing=text["live needs the model"])
elif chosen_style not in scenario.styles:
    st.warning(text["scenario only in other style"])

# -- the workspace's files and the question as they stand, read before Run is drawn --------------------
slots = st.session_state["playground_files"]
entries = workspace_entries(slots)
good, problems = check_files(entries)

can_run = (engine or replay) is not None if mode == "live" else chosen_style in scenario.styles
written_by = "scripted" if mode == "scripted" else engine and engine.info.label()
if replay is not None:  # a pack's recording, when no model is loaded
    written_by = f"a lesson pack: {source.label}"
# a recorded episode shows at once; a new question or new files replay it again on Run
kept = st.session_state.get("playground_result")
auto = replay is not None and (kept.model if kept else None) != written_by

# -- the demo first: Run and, under it, the loop the run lights (projected, the first screen) ------------
if st.button("Run the episode", key="playground_run", type="primary", disabled=not can_run) or auto:
    question = st.session_state["playground_question"]
    done = run_episode(scenario, question, chosen_style, good, len(problems), panel, engine, replay, written_by)
    if done is not None:
        st.session_state["playground_result"] = done
        st.session_state["playground_call"] = 1  # the calls' picker starts again at the first
result = st.session_state.get("playground_result")
frames, end = (run_frames(result.calls), run_end(result.calls)) if result else (None, "")
loop_view("playground_loop", frames=frames, caption="" if result else text["the loop before a run"], end=end)

# -- the workspace, editable ---------------------------------------------------------------------
scene("Workspace")
st.markdown(text["workspace"])
if st.session_state.get(LINK_PROBLEM):  # a link whose files could not be used: why, above the scenario's
    st.warning(st.session_state[LINK_PROBLEM])
draw_workspace(slots, problems)
# a copied link carries the files when they differ from the scenario's
too_long = edits_to_url("files", None if entries == list(scenario.files.items()) else json.dumps(entries))
if too_long:
    st.caption(too_long)

# -- the question, and (read alone) the run --------------------------------------------------------
scene("Question")
if mode == "scripted":
    st.caption(text["scripted question"])
else:
    st.markdown(text["question"])
st.text_area("The user's message", key="playground_question", height=80, disabled=mode == "scripted")
if mode == "live":
    st.caption(text["run above"])

# -- what the run did: a fixed set of sections, however many calls it made --------------------------
scene("The calls")
if not result:
    st.caption(text["no run yet"])
else:
    st.markdown(text["the loop"])
    st.caption(
        f"Turns written by: {result.model}; style {result.style}"
        + (f"; {result.left_out} file(s) left out" if result.left_out else "")
    )
    calls = result.calls
    # one call at a time, picked here: a run of 7 calls is one screen (and one section projected), not 7
    numbers = list(range(1, len(calls) + 1))
    if st.session_state.get("playground_call") not in numbers:
        st.session_state["playground_call"] = 1
    if numbers:  # (a run the model broke off before its first call has none to pick)
        number = st.segmented_control(
            "Call", numbers, key="playground_call", required=True, format_func=lambda n: f"call {n}"
        )
        draw_call(number, calls[number - 1], tiny=result.tiny, unseen=result.unseen[number - 1])

scene("The ledger", level="subheader")
if not result:
    st.caption(text["no run yet"])
else:
    draw_ledger(result)

scene("After the run", level="subheader")
if not result:
    st.caption(text["no run yet"])
else:
    st.markdown(text["after the run"])
    draw_files_after(result.files_before, result.files_after)

scene("What to notice", heading=None)
notice(text["what to notice"])
