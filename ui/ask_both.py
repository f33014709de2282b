"""Lesson 1's live panel: the same question asked without tools and with them, side by side; streamed token by
token from the model, or played back from a lesson pack's recording when no model is loaded."""

from __future__ import annotations

import streamlit as st

from engine.packs.panel_source import PanelSource
from engine.teaching.panels import Panel
from ui.literal import draw_reply
from ui.models import draw_source, tokenizer
from ui.numbers import format_count
from ui.packs import replay_episode_here
from ui.stream import TokenStream


def ask_both_live(engine, bare: Panel, with_tools: Panel) -> None:
    """Ask the model without tools, then with them (calling the tools between its turns), each streamed in a column."""
    from engine.harness.loop import iterate_episode
    from engine.model.live import LiveModel, generate_turn

    tok = tokenizer()
    left, right = st.columns(2)
    with left:
        st.subheader("Without tools")
        stream = TokenStream(is_special=tok.is_special)
        generation = generate_turn(
            engine, bare.request, bare.generation_for(engine.info.random_weights), on_step=stream.add
        )
        stream.finish()
        st.caption(f"{format_count(generation.output_tokens)} tokens, finish: {generation.finish}")
    with right:
        st.subheader("With tools")
        # one strip per model call, streamed as it is written; the tool results between them
        streams = [TokenStream(is_special=tok.is_special)]
        live = LiveModel(
            engine, with_tools.generation_for(engine.info.random_weights), on_step=lambda step: streams[-1].add(step)
        )
        request = with_tools.request
        for call in iterate_episode(
            live, request.messages, request.tools, request.style, max_turns=with_tools.max_turns
        ):
            streams[-1].finish()
            st.caption(f"{format_count(call.turn.output_tokens)} tokens, finish: {call.turn.finish}")
            for result in call.results:
                st.markdown(f"Tool result: `{result.text}`")
            streams.append(TokenStream(is_special=tok.is_special))
        streams[-1].finish()


def replay_both(bare_source: PanelSource, tools_source: PanelSource, with_tools: Panel) -> None:
    """The two recorded answers from a lesson pack, side by side (a side the pack lacks says where to get it)."""
    left, right = st.columns(2)
    with left:
        st.subheader("Without tools")
        draw_source(bare_source)
        if bare_source.run is not None:
            recorded = bare_source.run.generation()
            draw_reply(recorded.text)  # the model's words literally, as the other column draws them
            st.caption(f"{format_count(recorded.output_tokens)} tokens, finish: {recorded.finish}")
    with right:
        st.subheader("With tools")
        played = None
        if tools_source.run is None:
            draw_source(tools_source)
        else:
            request = with_tools.request
            played = replay_episode_here(tools_source.run, with_tools, request.messages, request.tools)
        for call in played.calls if played else []:
            draw_reply(call.turn.text)  # long whitespace runs collapsed, as the live view does
            for result in call.results:
                st.markdown(f"Tool result: `{result.text}`")
