"""The models a page can use, once per server process: the tokenizer, the tiny model, the live model.

The live model lives in the engine's process-wide registry (engine.model.loading): loaded once, from
whichever session pressed the sidebar's button, then found loaded by every session of the server.

Also a panel's source (engine/packs/panel_source.py chooses: the model, a lesson pack's run, or
nothing) and the one line that says what made a panel's figures, or why there are none. The model's
status lines and load button are in ui/model_status.py.
"""

from __future__ import annotations

import streamlit as st

from engine.core.tokenizer import load_tokenizer
from engine.errors import EngineError
from engine.model.loading import TINY, find_loaded, load_model
from engine.packs.panel_source import PanelSource, choose_source
from engine.settings import BUILTIN, load_settings
from engine.teaching.panels import Panel
from ui.packs import active_pack, for_learners
from ui.shipped_model import builtin_engine, builtin_label
from ui.words import words

TINY_LABEL = "random weights: its words and probabilities mean nothing, only the mechanics are real"
RANDOM_LABEL = "its words and probabilities mean nothing, only the mechanics are real"
SETUP_PAGE = "app_pages/setup.py"  # the teacher's page: getting and loading a model, the engine, run_tests, packs


def setup_link(label: str = "Set-up") -> None:
    """The one link a lesson page or the sidebar gives for everything operational."""
    st.page_link(SETUP_PAGE, label=label, icon=":material/settings:")


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
        loaded = find_loaded(live_model_name())
        # a model whose folder's own chat template went past its limits draws nothing (the sidebar says why)
        return None if template_problem(loaded) else loaded
    return None


def template_problem(loaded) -> str | None:
    """The line that says a loaded model's own chat template is unusable (it went past its time or memory limit), or None."""
    problem = getattr(getattr(loaded, "tokenizer", None), "template_problem", None)
    if not problem:
        return None
    return (
        f"The chat template in {loaded.info.name}'s folder is unusable: {problem}. The lessons go on without this "
        "model; load another model folder."
    )


def panel_source(panel: Panel) -> PanelSource:
    """Where `panel`'s figures come from now: the model the sidebar chose, else this session's lesson pack, else nothing."""
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
        st.caption(builtin_label(thing.info))  # one line: the shipped model is the site's default, not a warning
    elif kind == "live":
        st.success(f"Live model: {thing.info.label()}")
    elif kind in ("random", "tiny"):
        st.warning(random_label(thing.info))


def no_model_box() -> None:
    """The line a model panel shows when nothing can run, and the link to where a teacher loads one."""
    st.info(words("home", "no model loaded"))
    setup_link("Load a model: Set-up")


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
        st.info(for_learners(source.reason))
    else:
        st.warning(for_learners(source.reason))
