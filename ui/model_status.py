"""The model's status: the sidebar's lines and load button, Home's one line, and how a loaded model runs (the Set-up page).

The live model is loaded once per server (engine.model.load_jobs.start_load), from whichever session
pressed the button, then found loaded by every session of the server.
"""

from __future__ import annotations

import streamlit as st

from engine.model.availability import check_model
from engine.model.load_jobs import find_job, start_load
from engine.model.loading import find_loaded
from engine.settings import BUILTIN, load_settings
from ui.models import RANDOM_LABEL, TINY_LABEL, current_engine, random_label, server_engine, template_problem
from ui.shipped_model import builtin_if_ready, builtin_label
from ui.words import words


def choice_label(choice: str, name: str) -> str:
    """The sidebar's words for a model choice (`name`: the live model's)."""
    return {
        "builtin": "the shipped model (trained here; not Qwen3)",
        "live": name,
        "tiny": "tiny (random weights)",
        "off": "off",
    }[choice]


@st.cache_data(ttl=30, show_spinner=False)
def weights_on_disk(name: str) -> bool:
    """Whether `name`'s weights are on this machine (a folder, or the Hugging Face cache); the engine's torch-free check."""
    return check_model(name).state in ("local folder", "cached", "loaded")


def draw_progress(bar, job) -> None:
    """The load job's latest stage on a progress bar: bytes while downloading, else the stage's words."""
    if job.total:
        bar.progress(
            min(job.done / job.total, 1.0), text=f"{job.stage}: {job.done / 1e6:,.1f} / {job.total / 1e6:,.1f} MB"
        )
    else:
        bar.progress(1.0 if "ready" in job.stage else 0.0, text=job.stage)


def load_live_model(name: str):
    """Load the live model for the whole server, drawing its progress here; the model, or None with the error kept for the sidebar.

    The load runs in a thread of the server process (engine.model.load_jobs.start_load), not in this
    script run: a learner who clicks elsewhere meanwhile does not stop it, a second press
    anywhere joins it, and once it is done every session finds the model loaded.
    """
    job = start_load(name)
    bar = st.progress(0.0, text=f"Loading {name}…")
    # the script thread only watches; the bar is redrawn at most every 0.2 s
    while not job.wait(0.2):
        draw_progress(bar, job)
    bar.empty()
    if job.error:
        st.session_state["model_error"] = job.error
        return None
    st.session_state.pop("model_error", None)
    return job.model


def model_summary(name: str) -> None:
    """One line on the model the sidebar chose: loaded, random, waiting to be loaded, off or missing."""
    choice = st.session_state.get("model", "live")
    shipped = choice == "builtin" or (choice == "live" and name == BUILTIN and not load_settings().engine_url)
    # the shipped model loads in the background: this line never waits for it
    engine = builtin_if_ready() if shipped else current_engine()
    if shipped and engine is None:
        st.info(
            words("home", "shipped model loading")
            if not st.session_state.get("model_error")
            else st.session_state["model_error"]
        )
    elif choice == "tiny":
        st.warning(
            "The tiny model is selected: random weights, its words and probabilities mean nothing, only the mechanics are real."
        )
    elif engine is not None and engine.info.name == BUILTIN:
        st.info(builtin_label(engine.info))
    elif choice == "live" and engine is not None:
        if engine.info.random_weights:
            st.warning(random_label(engine.info))
        else:
            st.success(f"{engine.info.label()} is loaded for everyone using this site.")
    elif choice == "live" and (problem := template_problem(find_loaded(name))):
        st.error(problem)
    elif choice == "live" and weights_on_disk(name):
        st.info(f"{name} is on this machine, not loaded yet: press **Load the model** in the sidebar.")
    elif choice == "off":
        # the shipped model first: it is always here and loads in seconds; then the live model where it is another
        best = f"**{choice_label('builtin', name)}**" + ("" if name == BUILTIN else f" or {name}")
        st.info(words("home", "model off", model=best))
    else:
        st.info(words("home", "no model loaded"))


def model_status(name: str) -> None:
    """The sidebar's model lines: what is chosen, whether this server has it loaded (for every session), and the button that loads it."""
    choice = st.session_state.get("model", "live")
    if choice == "off":
        st.caption("No model: the lessons use the tokenizer and scripted runs.")
        return
    if choice == "tiny":
        st.caption(f"Tiny model: {TINY_LABEL}.")
        return
    if choice == "builtin" or (name == BUILTIN and not load_settings().engine_url):
        engine = builtin_if_ready()  # never waits: a panel that draws the model waits for the same load
        if engine is not None:
            st.caption(builtin_label(engine.info))
        elif st.session_state.get("model_error"):
            st.error(st.session_state["model_error"])
        else:
            st.caption(words("home", "shipped model loading"))
        return
    if load_settings().engine_url:
        server = server_engine()
        if server is not None:
            st.caption(words("engines", "server", label=server.info.label()), help=words("engines", "server help"))
        else:
            st.error(st.session_state.get("model_error", "the model server cannot be reached"))
        return
    loaded = find_loaded(name)
    if loaded is not None:
        loaded_lines(loaded)
        return
    job = find_job(name)
    if job is not None and not job.finished.is_set():
        wait_for_other_load(name)
        return
    present = weights_on_disk(name)
    st.caption(f"{name}: {'on this machine, not loaded yet' if present else 'not on this machine'}")
    if st.button("Load the model" if present else "Try to download and load", key="sidebar_load"):
        if load_live_model(name) is not None:
            st.rerun()  # draw the sidebar and every panel again, now with the model
    if st.session_state.get("model_error"):
        st.error(st.session_state["model_error"])


def loaded_lines(loaded) -> None:
    """The sidebar's lines for a model this server has loaded (how it runs is on the Set-up page: engine_lines)."""
    st.caption(f"Loaded for everyone on this site: {loaded.info.label()}")
    if problem := template_problem(loaded):
        st.error(problem)
    if loaded.info.random_weights:
        st.warning(f"Random weights: {RANDOM_LABEL}.")


def engine_lines(loaded) -> None:
    """How a loaded model runs here, each choice with the timing or setting behind it (the Set-up page)."""
    st.caption(f"{loaded.info.label()}")
    reasons = getattr(loaded, "reasons", {})
    if loaded.info.quant == "int8":
        st.caption(words("engines", "int8", reason=reasons.get("quant", "")), help=words("engines", "int8 help"))
    if loaded.info.threads:
        st.caption(words("engines", "threads", threads=loaded.info.threads, reason=reasons.get("threads", "")))
    if reasons.get("load"):
        seconds, how = reasons["load"]
        st.caption(words("engines", "load", seconds=seconds, reason=how))
    if reasons.get("decode_step"):
        st.caption(words("engines", "decode step", reason=reasons["decode_step"]))
    if reasons.get("kv_cache"):
        st.caption(words("engines", "kv cache", reason=reasons["kv_cache"]))


@st.fragment(run_every=1.0)
def wait_for_other_load(name: str) -> None:
    """While a load started elsewhere runs: its stage, checked every second; the whole page redraws when it is done."""
    job = find_job(name)
    if job is None or job.finished.is_set():
        st.rerun(scope="app")
    st.caption(f"{name} is being loaded on this server (started from another tab or by another user): {job.stage}")
