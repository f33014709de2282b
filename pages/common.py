"""Helpers every page shares: lesson text, the shared sidebar, URL state, cached tokenizer and model, drawings.

Pages stay short scripts: they read their words with `lesson(...)`, seed widgets from the URL
with `from_url(...)`, call the engine once and draw with `token_strip(...)` / `notice(...)`.
Nothing here computes a figure: every number comes from engine/.
"""

from __future__ import annotations

import html
import json
import re
import sys
from functools import lru_cache
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lessons"
TRACES = ROOT / "assets" / "traces"

STYLES = ("native", "react")
STYLE_LABELS = {"native": "Native (<tool_call>)", "react": "ReAct (Action:)"}
MODEL_CHOICES = ("live", "tiny", "off")
TINY_LABEL = "random weights: its words and probabilities mean nothing, only the mechanics are real"


# -- the words ------------------------------------------------------------------------------
def lesson_index() -> list[dict]:
    """The ordered lessons and pages (lessons/index.json): id, title, section, page, url_path."""
    return json.loads((LESSONS / "index.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=32)
def _lesson_cached(path: str, mtime: float) -> dict[str, str]:
    text = Path(path).read_text(encoding="utf-8")
    sections: dict[str, str] = {}
    title = ""
    name = "intro"
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("# ") and not title:
            title = line[2:].strip()
            continue
        if line.startswith("## "):
            sections[name] = "\n".join(lines).strip()
            name, lines = line[3:].strip().lower(), []
            continue
        lines.append(line)
    sections[name] = "\n".join(lines).strip()
    sections["title"] = title
    return sections


def lesson(lesson_id: str) -> dict[str, str]:
    """A lesson's Markdown split into sections: "title", "intro", then each "## Heading" by its lowercase name."""
    path = LESSONS / f"{lesson_id}.md"
    return _lesson_cached(str(path), path.stat().st_mtime)


def words(lesson_id: str, section: str, **values) -> str:
    """One section of a lesson, with {placeholders} filled from `values` (figures the engine computed)."""
    text = lesson(lesson_id).get(section.lower(), "")
    return text.format(**values) if values else text


# -- URL state ----------------------------------------------------------------------------------
def from_url(key: str, param: str, default, cast=str, choices=None):
    """Seed a widget's session state from the URL's `param` the first time it runs, so a shared link reproduces it."""
    if key not in st.session_state:
        value = default
        raw = st.query_params.get(param)
        if raw is not None:
            try:
                candidate = cast(raw)
                if choices is None or candidate in choices:
                    value = candidate
            except (TypeError, ValueError):
                pass
        st.session_state[key] = value
    elif choices is not None and st.session_state[key] not in choices:
        # a widget can be left empty (a segmented control clicked off): fall back, never pass None on
        st.session_state[key] = default
    return st.session_state[key]


def to_url(**params) -> None:
    """Write the page's state into the URL (None removes a parameter)."""
    for name, value in params.items():
        if value is None:
            st.query_params.pop(name, None)
        elif st.query_params.get(name) != str(value):
            st.query_params[name] = str(value)


def style() -> str:
    return st.session_state.get("style") or "native"


# -- cached engine pieces ------------------------------------------------------------------------
@st.cache_resource(show_spinner="Loading the Qwen3 tokenizer…")
def tokenizer():
    """The Qwen3 tokenizer, once per process."""
    from engine.tokenizer import load_tokenizer

    return load_tokenizer()


@st.cache_resource(show_spinner="Building the tiny random-weights model…")
def tiny_engine():
    """The tiny random-weights Qwen3 (imports torch the first time)."""
    from engine.loading import TINY, load_model

    return load_model(TINY)


@st.cache_resource(show_spinner=False)
def _load_live(name: str, _progress=None):
    from engine.loading import load_model

    return load_model(name, progress=_progress)


def live_model_name() -> str:
    from engine.settings import load_settings

    return load_settings().model


@st.cache_data(ttl=30, show_spinner=False)
def weights_on_disk(name: str) -> bool:
    """Whether `name`'s weights are on this machine (a folder, or the Hugging Face cache); no network, no torch."""
    path = Path(name).expanduser()
    if path.is_dir():
        return (path / "config.json").is_file() and any(path.glob("*.safetensors"))
    try:
        from huggingface_hub import try_to_load_from_cache

        config = try_to_load_from_cache(name, "config.json")
    except Exception:  # not a valid id: not here
        return False
    return isinstance(config, str) and any(Path(config).parent.glob("*.safetensors"))


def load_live_model(name: str):
    """Load the live model with a progress bar (download and load); an error message on failure."""
    from engine.errors import EngineError

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
    from engine.errors import EngineError
    from engine.trace import load_trace

    try:
        trace = load_trace(path)
    except EngineError:
        return None
    return None if trace.model.random_weights else trace


def model_source(trace_name: str):
    """What a model panel can show: ("live" | "tiny", engine), ("trace", trace) or ("none", None)."""
    engine = current_engine()
    if engine is not None:
        return ("tiny" if engine.info.random_weights else "live"), engine
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


def no_model_box() -> None:
    """The plain message a model panel shows when nothing can run: what is missing and how to get it."""
    name = live_model_name()
    st.info(words("home", "no model loaded", model=name))


# -- drawings ------------------------------------------------------------------------------------
CSS = """
<style>
.tok-strip {display:flex; flex-wrap:wrap; gap:4px; margin:0.4rem 0 0.8rem 0; line-height:1.25}
.tok {display:inline-flex; flex-direction:column; align-items:center; border-radius:6px; padding:3px 6px;
      border:1px solid rgba(0,0,0,0.18); color:#111; min-width:1.6em}
.tok .t {font-family:ui-monospace,Menlo,Consolas,monospace; font-size:1.05em; white-space:pre}
.tok .i {font-family:ui-monospace,Menlo,Consolas,monospace; font-size:0.72em; color:#333}
.tok.a {background:#cfe8ff} .tok.b {background:#ffe2b8} .tok.sp {background:#e6d4ff; font-weight:600}
.tok.now {outline:3px solid #d62728; outline-offset:1px}
.tok.later {opacity:0.35}
.prompt-view {font-family:ui-monospace,Menlo,Consolas,monospace; font-size:0.92em; white-space:pre-wrap;
      word-break:break-word; line-height:1.5; border:1px solid #ddd; border-radius:8px; padding:0.8rem; color:#111}
.prompt-view span {border-radius:3px}
.k-template {background:#e8e8e8} .k-tool {background:#ffe2b8} .k-message {background:#cfe8ff} .k-generation {background:#d5f5d5}
.legend span {display:inline-block; padding:2px 8px; margin-right:6px; border-radius:4px; color:#111}
.notice {border-left:6px solid #2e7d32; background:#eef7ee; padding:0.8rem 1rem; border-radius:6px; margin:1rem 0; color:#111}
.notice b {display:block; margin-bottom:0.3rem}
</style>
"""

PRESENTER_CSS = """
<style>
html {font-size: 22px;}
.block-container {max-width: 100% !important; padding-left: 2rem; padding-right: 2rem;}
</style>
"""

KIND_NAMES = {"template": "template instructions", "tool": "tool definitions", "message": "messages", "generation": "generation prompt"}


def show_token(text: str) -> str:
    """A token's text with its invisible characters made visible (space as ␣, newline as ↵)."""
    return text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")


def token_strip(pieces, show_ids: bool = True, current: int | None = None, extra=None, special=None) -> str:
    """HTML: one box per token, alternating colours, the id (and `extra[i]`) under each; `current` is outlined."""
    boxes = []
    for n, piece in enumerate(pieces):
        token_id, text = piece[0], piece[1]
        is_special = special[n] if special is not None else False
        kind = "sp" if is_special else ("a" if n % 2 == 0 else "b")
        if current is not None:
            kind += " now" if n == current else (" later" if n > current else "")
        under = []
        if show_ids:
            under.append(str(token_id))
        if extra is not None and extra[n] is not None:
            under.append(str(extra[n]))
        sub = f'<span class="i">{html.escape(" · ".join(under))}</span>' if under else ""
        boxes.append(f'<span class="tok {kind}"><span class="t">{html.escape(show_token(text))}</span>{sub}</span>')
    return f'<div class="tok-strip">{"".join(boxes)}</div>'


def draw_tokens(pieces, **options) -> None:
    st.markdown(token_strip(pieces, **options), unsafe_allow_html=True)


def prompt_html(prompt, by_token: bool = False) -> str:
    """HTML of a rendered prompt coloured by span kind; with `by_token`, one box per token instead."""
    if by_token:
        boxes = []
        for n, (piece, owner) in enumerate(zip(prompt.pieces, prompt.token_spans, strict=True)):
            kind = prompt.spans[owner].kind
            shade = "" if n % 2 == 0 else "filter:brightness(0.9);"
            boxes.append(
                f'<span class="tok k-{kind}" style="{shade}" title="{piece.id}"><span class="t">'
                f'{html.escape(show_token(piece.text))}</span><span class="i">{piece.id}</span></span>'
            )
        return f'<div class="tok-strip">{"".join(boxes)}</div>'
    parts = [
        f'<span class="k-{s.kind}" title="{html.escape(s.label)}: {s.tokens} tokens">{html.escape(prompt.span_text(s))}</span>'
        for s in prompt.spans
    ]
    return f'<div class="prompt-view">{"".join(parts)}</div>'


def legend_html() -> str:
    return '<div class="legend">' + "".join(f'<span class="k-{k}">{v}</span>' for k, v in KIND_NAMES.items()) + "</div>"


def notice(text: str, heading: str = "What to notice") -> None:
    """The box a teacher reads out at the end of a lesson."""
    body = _inline_markdown(text)
    st.markdown(f'<div class="notice"><b>{html.escape(heading)}</b>{body}</div>', unsafe_allow_html=True)


def _inline_markdown(text: str) -> str:
    # paragraphs, `code` and **bold** only: enough for a notice box
    out = []
    for para in [p for p in text.split("\n\n") if p.strip()]:
        escaped = html.escape(para.strip())
        escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
        escaped = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", escaped)
        out.append(f"<p>{escaped}</p>")
    return "".join(out)


# -- the shared sidebar ------------------------------------------------------------------------
PAGE_TITLE = "Tool calling, token by token"


def _chrome():
    """Page config, navigation and the shared sidebar; the page st.navigation chose for this request."""
    st.set_page_config(page_title=PAGE_TITLE, layout="wide")
    page = navigation()
    setup_defaults()
    sidebar()
    return page


def route() -> None:
    """The router (app.py runs this): the shared chrome, then the chosen page."""
    page = _chrome()
    st.session_state["_routed"] = True  # this run has the sidebar; the page's page_chrome() lets it through
    page.run()


def page_chrome() -> None:
    """Call first in every page: when the page runs without app.py's router, run it through the router instead.

    With a pages/ folder beside app.py, Streamlit runs a page file directly when its url_path
    equals the file's name and st.navigation has not yet run in the process: a cold server's
    first request (a teacher's link), and every AppTest switch_page. Drawing the page in that
    run is not enough: st.navigation moves the run onto app.py's page hash, so the page's
    widgets would get other element ids than in the routed runs that follow, and the browser
    would then send their defaults back (lesson 4's scenario jumped to its first option on the
    second click). So the fallback does what app.py does: the page runs again inside it, under
    its own page hash, and this outer run stops.
    """
    if st.session_state.pop("_routed", False):
        return
    caller = Path(sys._getframe(1).f_globals.get("__file__", "")).resolve()
    page = _chrome()
    # (the default page's url_path reads "" whatever index.json gives it)
    chosen = {"" if e.get("default") else e["url_path"]: ROOT / e["page"] for e in lesson_index()}.get(page.url_path)
    if chosen is not None and chosen.resolve() == caller:
        st.session_state["_routed"] = True
        page.run()
        st.stop()
    # st.navigation chose another page than the one running (never seen): go on drawing this one


def navigation():
    """st.navigation over lessons/index.json, by section; a page whose file is not written yet is left out."""
    sections: dict[str, list] = {}
    for entry in lesson_index():
        if (ROOT / entry["page"]).exists():
            page = st.Page(entry["page"], title=entry["title"], url_path=entry["url_path"], default=entry.get("default", False))
            sections.setdefault(entry["section"], []).append(page)
    return st.navigation(sections, expanded=True)


def setup_defaults() -> None:
    """Global defaults, set once per session (the URL can set style, model and presenter mode)."""
    from_url("style", "style", "native", str, STYLES)
    from_url("model", "model", "live", str, MODEL_CHOICES)
    from_url("present", "present", False, lambda v: v in ("1", "true", "yes"))


def sidebar() -> None:
    """The settings every page shares: style, model, model status, presenter mode."""
    st.markdown(CSS, unsafe_allow_html=True)
    with st.sidebar:
        st.segmented_control(
            "Tool-call style", STYLES, key="style", required=True,
            format_func=lambda s: {"native": "Native", "react": "ReAct"}[s],
            help="Native: Qwen3's own <tool_call> JSON. ReAct: Thought / Action / Action Input lines in plain text.",
        )
        name = live_model_name()
        st.radio(
            "Model", MODEL_CHOICES, key="model",
            format_func=lambda c: {"live": name, "tiny": "tiny (random weights)", "off": "off"}[c],
        )
        model_status(name)
        st.toggle("Presenter mode", key="present", help="Large text and a wide page, for projecting in class.")
    if st.session_state.get("present"):
        st.markdown(PRESENTER_CSS, unsafe_allow_html=True)
    to_url(style=style(), present="1" if st.session_state.get("present") else None, model=None if st.session_state.model == "live" else st.session_state.model)


def model_status(name: str) -> None:
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


# -- the tool editor (page 2 and the calculator) ------------------------------------------------------
NEW_TOOL = {
    "type": "function",
    "function": {
        "name": "new_tool",
        "description": "Describe what the tool does.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "What to look up."}}, "required": ["query"]},
    },
}


def tool_set_text(name: str) -> str:
    from engine.tools import load_tool_set

    return json.dumps(load_tool_set(name), indent=2, ensure_ascii=False)


def read_tools(text: str) -> tuple[list[dict] | None, list[str]]:
    """The tools in an editor's text, or None with the problems to show beside it (the text is never changed)."""
    from engine.tools import find_tool_problems

    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        return None, [f"Not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}."]
    except RecursionError:
        return None, ["Not usable JSON: it is nested too deeply to read."]
    except ValueError:  # an integer longer than Python reads (4,300 digits)
        return None, ["Not usable JSON: a number in it has too many digits to read."]
    problems = find_tool_problems(data)
    return (None, problems) if problems else (data, [])


def _edit_tools(text_key: str, change) -> None:
    tools, problems = read_tools(st.session_state[text_key])
    if tools is None:
        st.session_state[f"{text_key}_note"] = "Fix the problems first; the text was left as it is."
        return
    st.session_state.pop(f"{text_key}_note", None)
    st.session_state[text_key] = json.dumps(change(tools), indent=2, ensure_ascii=False)


def _add_tool(tools: list[dict]) -> list[dict]:
    names = {t.get("function", {}).get("name") for t in tools}
    number = 1
    while f"new_tool_{number}" in names:
        number += 1
    tool = json.loads(json.dumps(NEW_TOOL))
    tool["function"]["name"] = f"new_tool_{number}"
    return [*tools, tool]


def tool_editor(prefix: str, default_set: str = "strawberry", height: int = 420) -> tuple[list[dict] | None, list[str]]:
    """A JSON editor for tool definitions with add / remove / reset; returns (tools or None, problems).

    The problems are for the caller to show beside the field; the user's text always stays.
    """
    from engine.tools import TOOL_SETS

    set_key, text_key = f"{prefix}_set", f"{prefix}_json"
    from_url(set_key, "tools", default_set, str, TOOL_SETS)

    def reset():
        st.session_state[text_key] = tool_set_text(st.session_state[set_key])
        st.session_state.pop(f"{text_key}_note", None)

    if text_key not in st.session_state:
        reset()
    st.selectbox("Start from a shipped tool set", TOOL_SETS, key=set_key, on_change=reset)
    to_url(tools=st.session_state[set_key])
    buttons = st.columns(3)
    buttons[0].button("Add a tool", key=f"{prefix}_add", on_click=_edit_tools, args=(text_key, _add_tool), width="stretch")
    buttons[1].button("Remove the last tool", key=f"{prefix}_remove", on_click=_edit_tools, args=(text_key, lambda t: t[:-1]), width="stretch")
    buttons[2].button("Reset", key=f"{prefix}_reset", on_click=reset, width="stretch")
    st.text_area("Tool definitions (JSON)", key=text_key, height=height)
    tools, problems = read_tools(st.session_state[text_key])
    note = st.session_state.get(f"{text_key}_note")
    if note and problems:
        problems = [*problems, note]
    return tools, problems
