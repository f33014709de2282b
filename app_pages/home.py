"""Home: what the site teaches, the lesson list, model status, the shared settings."""

from pathlib import Path

import streamlit as st

from engine.harness.loop import load_scenario, run_scenario
from engine.settings import BUILTIN
from ui.models import current_engine, live_model_name, no_model_box, random_label, weights_on_disk
from ui.sections import section
from ui.shipped_model import builtin_label
from ui.teacher import minutes_words
from ui.views.loop_view import loop_view, run_frames
from ui.words import ROOT, lesson, lesson_index, page_title, words

text = lesson("home")
st.title(text["title"])
st.markdown(text["intro"])


@st.cache_resource(show_spinner=False)
def strawberry_frames() -> list:
    """The loop's stages as the scripted strawberry run goes through them (computed by the harness)."""
    return run_frames(run_scenario(load_scenario("strawberry"), "native").calls)


loop_view("home_loop", frames=strawberry_frames())

section("The lessons")
st.header("The lessons")
st.markdown(text["the lessons"])
# one line per page on what it teaches ("- id: line" in home.md)
lines = dict(row[2:].split(": ", 1) for row in text["lesson lines"].splitlines() if row.startswith("- ") and ": " in row)
for group in ("Lessons", "Tools"):
    if group == "Tools":
        section("The tools")
    shown = 0
    for entry in lesson_index():
        if entry["section"] == group and Path(ROOT / entry["page"]).exists():
            shown += 1
            if shown == 5 and group == "Lessons":  # presenter mode: four lessons to a screen
                section("The lessons, continued")
            st.page_link(entry["page"], label=page_title(entry["id"]))
            minutes = minutes_words(entry["id"])
            if entry["id"] in lines or minutes:
                st.caption(" · ".join(filter(None, [lines.get(entry["id"]), minutes and f"⏱ {minutes}"])))

@st.cache_resource(show_spinner=False)
def no_gpu_advice() -> str | None:
    """On a machine without a GPU: the smaller Qwen3 and the speed this machine can reach with it (measured once)."""
    from engine.model.cpu_speed import suggest_small_model
    from engine.model.loading import choose_device

    return None if choose_device("auto") == "cuda" else words("home", "no gpu", **suggest_small_model().as_json())


section("Model and settings")
st.header("Model and settings")
st.markdown(text["settings"])
name = live_model_name()
choice = st.session_state.get("model", "live")
if choice == "tiny":
    st.warning("The tiny model is selected: random weights, its words and probabilities mean nothing, only the mechanics are real.")
elif (engine := current_engine()) is not None and engine.info.name == BUILTIN:
    st.info(builtin_label(engine.info))
elif choice == "live" and engine is not None:
    if engine.info.random_weights:
        st.warning(random_label(engine.info))
    else:
        st.success(f"{engine.info.label()} is loaded for everyone using this site.")
elif choice == "live" and weights_on_disk(name):
    st.info(f"{name} is on this machine, not loaded yet: press **Load the model** in the sidebar.")
elif choice == "off":
    st.info(words("home", "model off", model=name))
else:
    no_model_box()
if choice == "live" and current_engine() is None and (advice := no_gpu_advice()):
    st.caption(advice)
