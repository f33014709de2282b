"""Harness playground: a whole episode, scripted or live, on an editable sandboxed workspace."""

import json

import streamlit as st

from engine.errors import EngineError
from engine.harness.grounding import unseen_values
from engine.harness.loop import Run, iterate_episode, list_scenarios, load_scenario
from engine.harness.playground import check_files, fresh_workspace, play_script, snapshot
from engine.teaching.panels import find_panel
from ui.confinement import visitor_id
from ui.draw import notice
from ui.glossary import show_intro
from ui.literal import plural
from ui.models import draw_source, panel_source, tokenizer
from ui.packs import replay_episode_here
from ui.playground_files import (
    LINK_PROBLEM,
    draw_call,
    draw_files_after,
    draw_ledger,
    draw_workspace,
    load_files,
    load_linked_files,
)
from ui.sections import more, scene
from ui.state import edits_to_url, from_url, restore, style, to_url
from ui.stream import TokenStream
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
with st.container(key="playground_pickers"):
    left, right = st.columns([2, 3])
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
MAX_TURNS = panel.max_turns
source = panel_source(panel) if mode == "live" else None
engine = source.engine if source else None
replay = source.run if source else None
if source is not None:
    draw_source(source, missing=text["live needs the model"])
elif chosen_style not in scenario.styles:
    st.warning(text["scenario only in other style"])

# -- the workspace's files and the question as they stand, read before Run is drawn --------------------
slots = st.session_state["playground_files"]
for slot in slots:  # the learner's files survive a visit to another page
    restore(f"playground_path_{slot}")
    restore(f"playground_text_{slot}")
restore("playground_question")
entries = [
    (st.session_state.get(f"playground_path_{s}", ""), st.session_state.get(f"playground_text_{s}", "")) for s in slots
]
good, problems = check_files(entries)

can_run = (mode == "scripted" and chosen_style in scenario.styles) or (
    mode == "live" and (engine or replay) is not None
)
written_by = (
    "scripted"
    if mode == "scripted"
    else (f"a lesson pack: {source.label}" if replay else engine and engine.info.label())
)
# a recorded episode shows at once; a new question or new files replay it again on Run
auto = replay is not None and (st.session_state.get("playground_result") or {}).get("model") != written_by


def run_episode() -> None:
    """Run the episode on a fresh copy of the workspace, its progress in a status box; keep what it did."""
    messages = [*scenario.messages[:-1], {"role": "user", "content": st.session_state["playground_question"]}]
    run, departures = Run(chosen_style, "per-block"), []
    with (
        st.status("Running the episode…", expanded=True) as status,
        fresh_workspace(good, visitor=visitor_id()) as workspace,
    ):
        streams = [TokenStream(is_special=tokenizer().is_special)]
        if mode == "scripted":
            episode = play_script(scenario, chosen_style, workspace, run, MAX_TURNS, departures)
        elif replay is None:
            from engine.model.live import LiveModel

            # each turn streams into the status box as the model writes it
            model = LiveModel(
                engine, panel.generation_for(engine.info.random_weights), on_step=lambda token: streams[-1].add(token)
            )
            episode = iterate_episode(
                model, messages, scenario.tools, style=chosen_style, workspace=workspace, max_turns=MAX_TURNS, run=run
            )
        try:
            if replay is not None:
                run = replay_episode_here(replay, panel, messages, scenario.tools, workspace)
            else:
                for call in episode:
                    streams[-1].clear()
                    status.write(
                        f"Call {len(run.calls)}: {call.cost.input_tokens:,} tokens in, {call.cost.output_tokens:,} out"
                    )
                    streams.append(TokenStream(is_special=tokenizer().is_special))
        except EngineError as error:
            run.stop_reason = f"the model failed: {error}"
        files_after = snapshot(workspace)
        # (the loop picture under this box plays the run: the box closes to one line)
        status.update(
            label=f"Done: {plural(len(run.calls), 'call')}, played in the loop below" if run else "Not replayed",
            state="complete",
            expanded=run is None,
        )
    if run is not None:
        st.session_state["playground_result"] = {
            "calls": run.calls,
            # each call's one-line values found nowhere in what the model had read: the check beyond the schema
            "unseen": [unseen_values(call, run.messages) for call in run.calls],
            "files_before": dict(good),
            "files_after": files_after,
            "left_out": len(problems),
            "style": chosen_style,
            "answer": run.answer,
            "stop": run.stop_reason,
            "model": written_by,
            "tiny": mode == "live" and engine is not None and engine.info.random_weights,
            "departure": departures[0] if departures else None,
        }
        st.session_state["playground_call"] = 1  # the calls' picker starts again at the first


# -- the demo first: Run and, under it, the loop the run lights (projected, the first screen) ------------
if st.button("Run the episode", key="playground_run", type="primary", disabled=not can_run) or auto:
    run_episode()
last = st.session_state.get("playground_result")
loop_view(
    "playground_loop",
    frames=run_frames(last["calls"]) if last else None,
    caption="" if last else text["the loop before a run"],
    end=run_end(last["calls"]) if last else "",
)

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
result = st.session_state.get("playground_result")
scene("The calls")
if not result:
    st.caption(text["no run yet"])
else:
    st.markdown(text["the loop"])
    st.caption(
        f"Turns written by: {result['model']}; style {result['style']}"
        + (f"; {result['left_out']} file(s) left out" if result["left_out"] else "")
    )
    calls = result["calls"]
    # one call at a time, picked here: a run of 7 calls is one screen (and one section projected), not 7
    numbers = list(range(1, len(calls) + 1))
    if st.session_state.get("playground_call") not in numbers:
        st.session_state["playground_call"] = 1
    if numbers:  # (a run the model broke off before its first call has none to pick)
        number = st.segmented_control(
            "Call", numbers, key="playground_call", required=True, format_func=lambda n: f"call {n}"
        )
        unseen = result.get("unseen") or [[] for _ in calls]
        draw_call(number, calls[number - 1], tiny=result.get("tiny", False), unseen=unseen[number - 1])

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
    draw_files_after(result["files_before"], result["files_after"])

scene("What to notice", heading=None)
notice(text["what to notice"])
