"""Lesson 6's free and constrained replies: recorded in a pack or decoded on a click, then side by side, each
with the parser's verdict."""

import streamlit as st

from engine.core.call_formats import constrained_format, parse_turn
from engine.errors import EngineError
from engine.model.results import SideBySide
from engine.teaching.panels import Panel
from ui.literal import draw_reply, plural
from ui.models import TINY_LABEL, draw_source, is_server, panel_source, show_engine_error
from ui.sections import section
from ui.words import words

PAIR_KEY = "constrained_decoding_pair"  # session state: (the engine's label, tool_choice, its SideBySide)


def decoded_pair(panel: Panel, mode: str, text: dict) -> tuple[SideBySide | None, str | None]:
    """The two replies and who wrote them: a pack's recording, or the model's on "Decode both" (kept for this
    engine and tool_choice until either changes); (None, None) until there are two to show."""
    pair = panel_source(panel)
    if pair.kind == "pack":
        draw_source(pair)
        return pair.run.side_by_side(), None
    if not pair.computes:
        draw_source(pair, missing=text["side by side needs the model"])
        return None, None
    from engine.model.live import side_by_side
    from engine.model.remote import grammar_problem as server_cannot

    draw_source(pair)
    engine = pair.engine
    settings = panel.generation_for(engine.info.random_weights)
    st.caption(
        f"Sampled at temperature {settings.temperature}, seed {settings.seed}, up to {settings.max_new_tokens} tokens."
    )
    # a model server may refuse a tool_choice's grammar: the panel says so instead of offering the button
    cannot = server_cannot(engine, mode) if is_server(engine) else None
    if cannot:
        st.info(words("engines", "server tool choice", reason=cannot))
    elif is_server(engine) and mode != "none":
        st.caption(words("engines", f"server grammar {engine.server}"))
    if not cannot and st.button("Decode both", key="constrained_decoding_generate", type="primary"):
        try:
            with st.spinner("Decoding the reply twice, free and constrained…"):
                st.session_state[PAIR_KEY] = (
                    engine.info.label(),
                    mode,
                    side_by_side(engine, panel.request, mode, settings),
                )
        except EngineError as error:
            show_engine_error(error)
    stored = st.session_state.get(PAIR_KEY)
    if not (stored and stored[0] == engine.info.label() and stored[1] == mode):
        return None, None
    return stored[2], f"Tiny model, {TINY_LABEL}" if engine.info.random_weights else engine.info.label()


def show_pair(mode: str, tools: list[dict], text: dict, both: SideBySide, who: str | None) -> bool:
    """The free and the constrained turn in two columns, each with its verdict under tool_choice `mode`; `who`
    labels each reply, `text` holds lesson 6's words. True when the two are the same."""
    turns = {
        "free": (both.unconstrained.text, both.unconstrained.finish),
        "constrained": (both.constrained.text, both.constrained.finish),
    }
    limit = both.constrained.settings.max_new_tokens
    for column, (label, (said, finish)) in zip(st.columns(2), turns.items(), strict=True):
        with column:
            st.markdown(f"**{label}** ({'no grammar' if label == 'free' or mode == 'none' else 'tool_choice ' + mode})")
            draw_reply(said, who)
            verdict = parse_turn(said, tools, constrained_format().name)
            ended = f"hit the token limit ({plural(limit, 'token')})" if finish == "length" else "stopped by itself"
            if mode == "none" and label == "constrained":
                st.markdown(f"tool_choice none: the reply is not read for calls; it comes back as text. It {ended}.")
            elif verdict.final:
                st.markdown(f"No call: a prose reply. It {ended}.")
            else:
                errors = "; ".join(e.error for e in verdict.errors) if verdict.errors else ""
                st.markdown(
                    f"Calls that pass every check: **{len(verdict.calls)}**. It {ended}."
                    + (f" Errors: `{errors}`" if errors else "")
                )
                if finish == "length" and not verdict.calls:
                    st.warning(text["cut off in decode both"])
    # same seed, same tokens: the page says why, on a screen of its own when projected
    return len({said for said, _ in turns.values()}) == 1 and mode != "none"


def explain_identical(mode: str, text: dict) -> None:
    """Why the free and the constrained reply came out the same (show_pair returned True): a section of its own."""
    section("Why the two replies are the same")
    st.info(text["identical" if mode == "auto" else "identical forced"])
