"""The models a page can use, once per server process: the tokenizer, the tiny model, the live model.

The live model lives in the engine's process-wide registry (engine.model.loading): loaded once, from
whichever session pressed the sidebar's button, then found loaded by every session of the server.

Also a panel's source (engine/teaching/panel_source.py chooses: the model, a lesson pack's run, or
nothing) and the one line that says what made a panel's figures, or why there are none.
"""

from __future__ import annotations

import streamlit as st

from engine.core.tokenizer import load_tokenizer
from engine.errors import EngineError
from engine.model.loading import TINY, check_model, find_job, find_loaded, load_model, start_load
from engine.settings import BUILTIN, load_settings
from engine.teaching.panel_source import PanelSource, choose_source
from engine.teaching.panels import Panel
from ui.shipped_model import builtin_engine, builtin_label
from ui.words import words

TINY_LABEL = "random weights: its words and probabilities mean nothing, only the mechanics are real"
RANDOM_LABEL = "its words and probabilities mean nothing, only the mechanics are real"


@st.cache_resource(show_spinner="Loading the Qwen3 tokenizer…")
def tokenizer():
    """The Qwen3 tokenizer, once per process."""
    return load_tokenizer()


@st.cache_resource(show_spinner="Building the tiny random-weights model…")
def tiny_engine():
    """The tiny random-weights Qwen3 (imports torch the first time)."""
    return load_model(TINY)


def live_model_name() -> str:
    return load_settings().model




@st.cache_data(ttl=30, show_spinner=False)
def weights_on_disk(name: str) -> bool:
    """Whether `name`'s weights are on this machine (a folder, or the Hugging Face cache); the engine's torch-free check."""
    return check_model(name).state in ("local folder", "cached", "loaded")


def draw_progress(bar, job) -> None:
    """The load job's latest stage on a progress bar: bytes while downloading, else the stage's words."""
    if job.total:
        bar.progress(min(job.done / job.total, 1.0), text=f"{job.stage}: {job.done / 1e6:,.1f} / {job.total / 1e6:,.1f} MB")
    else:
        bar.progress(1.0 if "ready" in job.stage else 0.0, text=job.stage)


def load_live_model(name: str):
    """Load the live model for the whole server, drawing its progress here; the model, or None with the error kept for the sidebar.

    The load runs in a thread of the server process (engine.model.loading.start_load), not in this
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


@st.cache_resource(show_spinner="Asking the model server which model it serves…", ttl=60)
def remote_engine(url: str):
    """The OpenAI-compatible server at QWEN_ENGINE_URL (engine/model/remote.py), asked again at most once a minute."""
    from engine.model.remote import connect

    return connect(url)


def server_engine():
    """The server's model when QWEN_ENGINE_URL names one, else None; a failure is kept for the sidebar."""
    url = load_settings().engine_url
    if not url:
        return None
    try:
        engine = remote_engine(url)
    except EngineError as error:
        st.session_state["model_error"] = str(error)
        return None
    st.session_state.pop("model_error", None)
    return engine


def show_engine_error(error: EngineError) -> None:
    """A model panel's failure as one message that says what happened (a server cut off, too slow, without logprobs,
    serving another model), never a traceback."""
    st.error(words("engines", "panel failed", error=str(error)))


def is_server(engine) -> bool:
    """Whether `engine` is a model server's (QWEN_ENGINE_URL), not a model in this process."""
    from engine.model.remote import RemoteEngine

    return isinstance(engine, RemoteEngine)


def current_engine():
    """The model the sidebar chose, if it is ready: the server at QWEN_ENGINE_URL, the live model loaded by anyone
    on this server, the tiny model, or None."""
    choice = st.session_state.get("model", "live")
    if choice == "tiny":
        return tiny_engine()
    if choice == "builtin" or (choice == "live" and live_model_name() == BUILTIN and not load_settings().engine_url):
        return builtin_engine()
    if choice == "live":
        if load_settings().engine_url:
            return server_engine()
        return find_loaded(live_model_name())
    return None


def panel_source(panel: Panel) -> PanelSource:
    """Where `panel`'s figures come from now: the model the sidebar chose, else this session's lesson pack, else nothing."""
    from ui.packs import active_pack

    pack = active_pack()
    if pack is not None and st.session_state.get("model") == "builtin":
        # a teacher's pack (recorded with Qwen3, say) comes before the shipped model; the model fills what it lacks
        recorded = choose_source(panel, None, pack, tokenizer())
        if recorded.kind == "pack":
            return recorded
    return choose_source(panel, current_engine(), pack, tokenizer())


def random_label(info) -> str:
    """What a random-weights model's panel says: never "Live model"."""
    if info.name == TINY:
        return f"Tiny model, {TINY_LABEL}."
    return f"Random weights: {info.name} ({info.weights()}, {info.device}). Its config.json says its weights are random: {RANDOM_LABEL}."


def model_label(kind: str, thing) -> None:
    """One line above a model panel saying which model computes what follows ("live" or "random")."""
    if kind == "live" and thing.info.name == BUILTIN:
        st.info(builtin_label(thing.info))
    elif kind == "live":
        st.success(f"Live model: {thing.info.label()}")
    elif kind in ("random", "tiny"):
        st.warning(random_label(thing.info))


def no_model_box() -> None:
    """The plain message a model panel shows when nothing can run: what is missing and how to get it."""
    name = live_model_name()
    st.info(words("home", "no model loaded", model=name))


def draw_source(source: PanelSource, missing: str | None = None) -> None:
    """The line above a panel: what made its figures, or why there are none (`missing`: the page's words for no model)."""
    if source.engine is not None:
        model_label(source.kind, source.engine)
    elif source.kind == "pack":
        st.info(words("packs", "recorded", label=source.label))
    elif source.why == "no-source":
        if missing is None:
            no_model_box()
        else:
            st.info(missing)
    elif source.why == "not-in-pack":
        st.info(source.reason)
    else:
        st.warning(source.reason)


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
        engine = builtin_engine()
        if engine is not None:
            st.caption(builtin_label(engine.info))
        else:
            st.error(st.session_state.get("model_error", "the shipped model could not be loaded"))
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
    elif not present:
        st.caption(words("home", "how to get the model", model=name))


def loaded_lines(loaded) -> None:
    """The sidebar's lines for a model this server has loaded."""
    st.caption(f"Loaded for everyone on this site: {loaded.info.label()}")
    reasons = getattr(loaded, "reasons", {})
    if loaded.info.quant == "int8":
        st.caption(words("engines", "int8", reason=reasons.get("quant", "")), help=words("engines", "int8 help"))
    if loaded.info.threads:
        st.caption(words("engines", "threads", threads=loaded.info.threads, reason=reasons.get("threads", "")))
    if reasons.get("decode_step"):
        st.caption(words("engines", "decode step", reason=reasons["decode_step"]))
    if reasons.get("kv_cache"):
        st.caption(words("engines", "kv cache", reason=reasons["kv_cache"]))
    if loaded.info.random_weights:
        st.warning(f"Random weights: {RANDOM_LABEL}.")


@st.fragment(run_every=1.0)
def wait_for_other_load(name: str) -> None:
    """While a load started elsewhere runs: its stage, checked every second; the whole page redraws when it is done."""
    job = find_job(name)
    if job is None or job.finished.is_set():
        st.rerun(scope="app")
    st.caption(f"{name} is being loaded on this server (started from another tab or by another user): {job.stage}")
