"""Lesson 6's free and constrained replies side by side, each with the parser's verdict."""

import streamlit as st

from engine.core.call_formats import constrained_format, parse_turn
from ui.literal import draw_reply, plural
from ui.sections import section


def show_pair(mode: str, tools: list[dict], text: dict, turns: dict, who: str | None, limit: int) -> bool:
    """The free and the constrained turn (label -> (text, finish)) in two columns, each with its verdict under
    tool_choice `mode`; `who` labels each reply, `text` holds lesson 6's words. True when the two are the same."""
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
                st.markdown(f"Calls that pass every check: **{len(verdict.calls)}**. It {ended}." + (f" Errors: `{errors}`" if errors else ""))
                if finish == "length" and not verdict.calls:
                    st.warning(text["cut off in decode both"])
    # same seed, same tokens: the page says why, on a screen of its own when projected
    return len({said for said, _ in turns.values()}) == 1 and mode != "none"


def explain_identical(mode: str, text: dict) -> None:
    """Why the free and the constrained reply came out the same (show_pair returned True): a section of its own."""
    section("Why the two replies are the same")
    st.info(text["identical" if mode == "auto" else "identical forced"])
