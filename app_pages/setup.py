"""Set-up, for teachers: the model and how to get it, the engine and its speed here, run_tests' confinement, lesson packs.

Everything operational lives here; the lessons and the sidebar keep one line of model status and link to it.
"""

from pathlib import Path

import streamlit as st

from engine.core.model_files import model_name_problem
from engine.settings import BUILTIN, load_settings
from ui.confinement import confinement_lines
from ui.model_status import engine_lines, model_summary
from ui.models import TINY_LABEL, current_engine, is_server, live_model_name
from ui.packs import active_pack, pack_lines
from ui.sections import scene
from ui.shipped_model import builtin_label
from ui.words import lesson, words

ID = "setup"
SHIPPED_MODEL_PAGE = "app_pages/shipped_model.py"

text = lesson(ID)
name = live_model_name()
st.title(text["title"])
st.markdown(text["intro"])
model_summary(name)


@st.cache_resource(show_spinner="Measuring this machine's memory speed…")
def no_gpu_advice() -> str | None:
    """On a machine without a GPU: the smaller Qwen3 and the speed this machine can reach with it (measured once)."""
    from engine.model.cpu_speed import suggest_small_model
    from engine.model.loading import choose_device

    return None if choose_device("auto") == "cuda" else words(ID, "no gpu", **suggest_small_model().as_json())


scene("The model")
st.markdown(words(ID, "the model", model=name))
st.page_link(SHIPPED_MODEL_PAGE, label="The shipped model: how it was trained, what it gets wrong")

scene("Getting a model")
engine = current_engine()
# a folder already on this server is not downloaded: the words say how to load it, and how to name another
# (a name no folder can have, such as ~someone-unknown/model, is refused by the sidebar's load in one line)
on_disk = name not in (BUILTIN, "tiny", "off") and not model_name_problem(name) and Path(name).expanduser().is_dir()
if engine is None:
    st.markdown(words(ID, "no model loaded, a folder" if on_disk else "no model loaded", model=name))
st.markdown(words(ID, "how to get another model" if on_disk else "how to get the model", model=name))

scene("Server settings")
st.markdown(text["settings"])

scene("The engine")
st.markdown(text["the engine"])
if engine is None:
    pack = active_pack()
    st.caption(f"No model computes now; lesson pack: {pack.label()}." if pack is not None else "No model computes now.")
elif is_server(engine):
    st.caption(words("engines", "server", label=engine.info.label()), help=words("engines", "server help"))
else:
    if engine.info.name == BUILTIN:
        st.caption(builtin_label(engine.info))
    elif st.session_state.get("model") == "tiny":
        st.caption(f"Tiny model, {TINY_LABEL}.")
    st.markdown(text["engine loaded"])
    engine_lines(engine)
if not load_settings().engine_url and (advice := no_gpu_advice()):
    st.caption(advice)

scene("Visitors' tests")
st.markdown(text["visitors' tests"])
confinement_lines()

scene("Lesson packs")
st.markdown(text["lesson packs"])
pack_lines()
