"""The models a page can use, cached once per server process: the tokenizer, the tiny model, the live model, traces.

Also the one-line labels that say what made a panel's figures, and the plain message a panel
shows when no model can run.
"""

from __future__ import annotations

import streamlit as st

from engine.errors import EngineError
from engine.loading import TINY, check_model, load_model
from engine.settings import load_settings
from engine.tokenizer import load_tokenizer
from engine.trace import load_trace
from pages.common.words import ROOT, words

TRACES = ROOT / "assets" / "traces"
TINY_LABEL = "random weights: its words and probabilities mean nothing, only the mechanics are real"


@st.cache_resource(show_spinner="Loading the Qwen3 tokenizer…")
def tokenizer():
    """The Qwen3 tokenizer, once per process."""
    return load_tokenizer()


@st.cache_resource(show_spinner="Building the tiny random-weights model…")
def tiny_engine():
    """The tiny random-weights Qwen3 (imports torch the first time)."""
    return load_model(TINY)


@st.cache_resource(show_spinner=False)
def _load_live(name: str, _progress=None):
    return load_model(name, progress=_progress)


def live_model_name() -> str:
    return load_settings().model


@st.cache_data(ttl=30, show_spinner=False)
def weights_on_disk(name: str) -> bool:
    """Whether `name`'s weights are on this machine (a folder, or the Hugging Face cache); the engine's torch-free check."""
    return check_model(name).state in ("local folder", "cached", "loaded")


def load_live_model(name: str):
    """Load the live model with a progress bar (download and load); an error message on failure."""
    bar = st.progress(0.0, text=f"Loading {name}…")

    def progress(done: int, total: int, desc: str) -> None:
        if total:
            bar.progress(min(done / total, 1.0), text=f"{desc}: {done / 1e6:,.1f} / {total / 1e6:,.1f} MB")
        else:
            bar.progress(1.0 if "ready" in desc else 0.0, text=desc)

    try:
        engine = _load_live(name, progress)
    except EngineError as error:
        bar.empty()
        st.session_state["model_error"] = str(error)
        return None
    bar.empty()
    st.session_state.pop("model_error", None)
    st.session_state["model_loaded"] = name
    return engine


def current_engine():
    """The model the sidebar chose, if it is ready: the loaded live model, the tiny model, or None."""
    choice = st.session_state.get("model", "live")
    if choice == "tiny":
        return tiny_engine()
    if choice == "live":
        name = live_model_name()
        if st.session_state.get("model_loaded") == name:
            return _load_live(name)
    return None


def find_trace(name: str):
    """A recorded trace assets/traces/<name>.json made by a real model, or None (none are shipped yet)."""
    path = TRACES / f"{name}.json"
    if not path.is_file():
        return None
    try:
        trace = load_trace(path)
    except EngineError:
        return None
    return None if trace.model.random_weights else trace


def model_source(trace_name: str, pack_run: str | None = None):
    """What a model panel can show: ("live" | "tiny", engine), ("pack", Replay), ("trace", trace) or ("none", None).

    `pack_run` names the panel's run in a lesson pack (pages/common/packs.py), used when no model is loaded."""
    engine = current_engine()
    if engine is not None:
        return ("tiny" if engine.info.random_weights else "live"), engine
    if pack_run is not None:
        from pages.common.packs import find_replay

        replay = find_replay(pack_run)
        if replay is not None:
            return "pack", replay
    trace = find_trace(trace_name)
    if trace is not None:
        return "trace", trace
    return "none", None


def model_label(kind: str, thing) -> None:
    """One line above a model panel saying what made what follows."""
    if kind == "live":
        st.success(f"Live model: {thing.info.label()}")
    elif kind == "tiny":
        st.warning(f"Tiny model, {TINY_LABEL}.")
    elif kind == "trace":
        st.info(f"Recorded run: {thing.source}.")
    elif kind == "pack":
        from pages.common.packs import recorded_label

        recorded_label(thing)


def no_model_box() -> None:
    """The plain message a model panel shows when nothing can run: what is missing and how to get it."""
    name = live_model_name()
    st.info(words("home", "no model loaded", model=name))


def model_status(name: str) -> None:
    """The sidebar's model lines: what is chosen, whether it is loaded, and the button that loads it."""
    choice = st.session_state.get("model", "live")
    if choice == "off":
        st.caption("No model: the lessons use the tokenizer and scripted runs.")
        return
    if choice == "tiny":
        st.caption(f"Tiny model: {TINY_LABEL}.")
        return
    if st.session_state.get("model_loaded") == name:
        st.caption(f"Loaded: {name}")
        return
    present = weights_on_disk(name)
    st.caption(f"{name}: {'on this machine, not loaded yet' if present else 'not on this machine'}")
    if st.button("Load the model" if present else "Try to download and load", key="sidebar_load"):
        load_live_model(name)
    if st.session_state.get("model_error"):
        st.error(st.session_state["model_error"])
    elif not present:
        st.caption(words("home", "how to get the model", model=name))
