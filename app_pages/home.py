"""Home: what the site teaches, the lesson list, one line of model status (the rest is on the Set-up page), the shared settings."""

import math
from pathlib import Path

import streamlit as st

from engine.harness.loop import list_gallery, load_scenario, run_scenario
from ui.model_status import model_summary
from ui.models import live_model_name, setup_link
from ui.numbers import format_count
from ui.sections import scene
from ui.state import STYLE_NAMES
from ui.teacher import class_path, minutes_words
from ui.views.loop_view import loop_view, run_end, run_frames
from ui.words import NUMBERED, ROOT, lesson, lesson_index, page_title, words

text = lesson("home")
st.title(text["title"])
st.markdown(text["intro"])


@st.cache_resource(show_spinner=False)
def strawberry_loop() -> tuple[list, str]:
    """The loop's stages as the scripted strawberry run goes through them (computed by the harness), and its end."""
    calls = run_scenario(load_scenario("strawberry"), STYLE_NAMES[0]).calls
    return run_frames(calls), run_end(calls)


# it plays once, then rests unlit with a Replay button (a class looks at it as long as the teacher talks)
frames, end = strawberry_loop()
loop_view("home_loop", frames=frames, end=end)

scene("The lessons")
# the count comes from lessons/index.json: the lessons listed below, never a number typed into the text
listed = [e for e in lesson_index() if e["section"] == NUMBERED and Path(ROOT / e["page"]).exists()]
st.markdown(words("home", "the lessons", lessons=format_count(len(listed))))
# one line per page on what it teaches ("- id: line" in home.md)
lines = dict(
    row[2:].split(": ", 1) for row in text["lesson lines"].splitlines() if row.startswith("- ") and ": " in row
)
lines = {key: line.format(cases=len(list_gallery())) for key, line in lines.items()}  # counts from the engine's data
for group in ("Lessons", "Tools"):
    if group == "Tools":
        scene("The tools", heading=None)
    entries = [e for e in lesson_index() if e["section"] == group and Path(ROOT / e["page"]).exists()]
    # presenter mode: four pages fit a 768 px screen, three beside the lessons' opening sentence; screens share them evenly
    screens = math.ceil(len(entries) / (3 if group == "Lessons" else 4))
    per_screen = math.ceil(len(entries) / screens)
    for shown, entry in enumerate(entries):
        if shown and shown % per_screen == 0:
            scene(f"The {group.lower()}, continued", heading=None)
        st.page_link(entry["page"], label=page_title(entry["id"]))
        minutes = minutes_words(entry["id"])
        if entry["id"] in lines or minutes:
            st.caption(" · ".join(filter(None, [lines.get(entry["id"]), minutes and f"⏱ {minutes}"])))

# a 50-minute class: the path's stops in order, four to a projected screen (lessons/teaching.json)
path = class_path()
pages = {e["id"]: e["page"] for e in lesson_index()}
length = sum(stop.minutes for stop in path)
scene(f"A {length}-minute class")
st.markdown(words("home", "a class", minutes=length))
# projected, three stops fit a 768 px screen: the stops shared evenly over as few screens as that takes
screens = math.ceil(len(path) / 3)
starts = {math.ceil(k * len(path) / screens) for k in range(1, screens)}
for number, stop in enumerate(path):
    if number in starts:
        scene(f"A {length}-minute class, continued", heading=None)
    st.page_link(pages[stop.page], label=f"{page_title(stop.page)} · {stop.minutes} min")
    st.caption(f"Screens: {' → '.join(stop.screens)}. {stop.show[0].upper()}{stop.show[1:]}. Ask: *{stop.ask}*")

scene("Model and settings")
st.markdown(text["settings"])
model_summary(live_model_name())
setup_link()
