"""The picture of the loop (Home, the playground): model → text → parser → checks → tool → result → prompt, as SVG.

On the playground the stages a run went through are lit one after another, read from the run itself:
each call's reply, its parse (a call or the final answer), its checks, each tool result.
"""

from __future__ import annotations

import streamlit as st

from ui.views import read_asset

STAGES = ["model", "text", "parser", "checks", "tool", "result", "prompt"]

_MOUNT = st.components.v2.component(
    "loop_view", html=read_asset("loop_view.html"), css=read_asset("loop_view.css"), js=read_asset("png_export.js") + read_asset("loop_view.js"),
    isolate_styles=True,
)


def run_frames(calls) -> list[tuple[str, str]]:
    """(stage, words) in the order a harness run went through them (`calls`: loop.Run.calls)."""
    frames = []
    for n, call in enumerate(calls, start=1):
        frames.append(("model", f"Call {n}: the model reads {call.cost.input_tokens:,} prompt tokens"))
        frames.append(("text", f"Call {n}: it writes {call.cost.output_tokens:,} tokens of text"))
        blocks = len(call.parse.blocks)
        frames.append(("parser", f"Call {n}: the parser finds {blocks} call block{'s' if blocks != 1 else ''}"
                       if blocks else f"Call {n}: no call block: this is the final answer"))
        if not blocks:
            break
        failed = len(call.parse.errors)
        frames.append(("checks", f"Call {n}: {blocks - failed} of {blocks} pass the checks"))
        for item in call.results:
            if item.ok:
                frames.append(("tool", f"Call {n}: runs {item.name}"))
            frames.append(("result", f"Call {n}: " + ("its result" if item.ok else "an error") + " goes back"))
        frames.append(("prompt", f"Call {n}: the results join the prompt of call {n + 1}"))
    return frames


def loop_view(key: str, frames: list[tuple[str, str]] | None = None, lit: str | None = None, caption: str = "") -> None:
    """Draw the loop; with `frames` the stages light one by one as the run went, else `lit` stays lit."""
    _MOUNT(data={"names": STAGES, "frames": [list(f) for f in frames or []], "lit": lit, "caption": caption}, key=key)
