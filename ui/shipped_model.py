"""The shipped model on the site: the sidebar's starting choice, its load once per server, and the words that label it."""

from __future__ import annotations

import streamlit as st

from engine.errors import EngineError
from engine.model.availability import starting_model
from engine.model.load_jobs import find_job, start_load
from engine.model.loading import find_loaded, load_model
from engine.settings import BUILTIN, load_settings

PROVENANCE_PAGE = "/shipped_model"  # the page with its provenance: how it was trained, what it gets wrong


@st.cache_resource(show_spinner="Loading the shipped model (a few seconds, once per server)…")
def builtin_engine():
    """The shipped model (assets/builtin-model), loaded once per process; None with the error kept when its folder is incomplete."""
    try:
        return load_model(BUILTIN)
    except EngineError as error:
        st.session_state["model_error"] = str(error)
        return None


def builtin_first() -> bool:
    """Whether every session starts on the shipped model (no QWEN_MODEL, no Qwen3 weights here)."""
    return not load_settings().model_chosen and _starting_choice() == "builtin"


def load_builtin_in_background() -> None:
    """Load the shipped model and wait for it (in the warm-up's thread): no page waits for it but a panel that draws
    it, which joins the same load; the sidebar watches the load's job meanwhile."""
    start_load(BUILTIN).finished.wait()


def builtin_if_ready():
    """The shipped model if this server has loaded it, else None; never waits for the load (the sidebar and Home's
    one line). Starts the load when the warm-up will not (a session that switched to it)."""
    loaded = find_loaded(BUILTIN)
    if loaded is None:
        job = find_job(BUILTIN)
        if job is None and not (builtin_first() and load_settings().warmup):
            job = start_load(BUILTIN)
        if job is not None and job.finished.is_set() and job.error:
            st.session_state["model_error"] = job.error
    return loaded


def default_model_choice() -> str:
    """The sidebar's starting choice: the shipped model, unless QWEN_MODEL names a model or Qwen3's weights are here."""
    return "live" if load_settings().model_chosen else _starting_choice()


@st.cache_data(ttl=30, show_spinner=False)
def _starting_choice() -> str:
    # looks in the Hugging Face cache for Qwen3-1.7B: at most every 30 s
    return "builtin" if starting_model() == BUILTIN else "live"


def builtin_label(info) -> str:
    """What the shipped model's panels say: what it is, that it is not Qwen3, and where its provenance is."""
    return f"Shipped model: {info.note}. [How it was trained]({PROVENANCE_PAGE})"
