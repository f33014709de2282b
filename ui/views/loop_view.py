"""The picture of the loop (Home, the playground): model → text → parser → checks → tool → result → prompt, as SVG.

On the playground the stages a run went through are lit one after another, read from the run itself:
each call's reply, its parse (a call or the final answer), its checks, each tool result. A verdict
colours its stage (checks passed or failed, an error going back), in the site's palette (ui/palette.py).
The picture plays once, can be stepped (Back / Next) and replayed, and ends unlit: once the run is over
no stage is "now", and its last words say how the run ended.
"""

from __future__ import annotations

import streamlit as st

from ui.palette import legend_entries, view_palette
from ui.views import read_asset

STAGES = ["model", "text", "parser", "checks", "tool", "result", "prompt"]

_MOUNT = st.components.v2.component(
    "loop_view",
    html=read_asset("loop_view.html"),
    css=read_asset("loop_view.css"),
    js=read_asset("png_export.js") + read_asset("loop_view.js"),
    isolate_styles=True,
)

LEGEND_WORDS = {
    "now": "the stage the run is at",
    "passed": "every block passed the checks",
    "failed": "a block failed a check, or an error goes back",
}


def run_frames(calls) -> list[tuple[str, str, str]]:
    """(stage, words, verdict) in the order a harness run went through them (`calls`: loop.Run.calls);
    verdict is "passed" or "failed" where the stage has one, else ""."""
    frames = []
    for n, call in enumerate(calls, start=1):
        frames.append(("model", f"Call {n}: the model reads {call.cost.input_tokens:,} prompt tokens", ""))
        frames.append(("text", f"Call {n}: it writes {call.cost.output_tokens:,} tokens of text", ""))
        blocks = len(call.parse.blocks)
        frames.append(
            (
                "parser",
                f"Call {n}: the parser finds {blocks} call block{'s' if blocks != 1 else ''}"
                if blocks
                else f"Call {n}: no call block: this is the final answer",
                "",
            )
        )
        if not blocks:
            break
        failed = len(call.parse.errors)
        frames.append(
            ("checks", f"Call {n}: {blocks - failed} of {blocks} pass the checks", "failed" if failed else "passed")
        )
        for item in call.results:
            if item.ok:
                frames.append(("tool", f"Call {n}: runs {item.name}", ""))
            frames.append(
                (
                    "result",
                    f"Call {n}: " + ("its result goes back" if item.ok else "an error goes back"),
                    "" if item.ok else "failed",
                )
            )
        frames.append(("prompt", f"Call {n}: the results join the prompt of call {n + 1}", ""))
    return frames


def run_end(calls) -> str:
    """The picture's last words, once the run is over and no stage is lit."""
    count = f"{len(calls):,} call{'s' if len(calls) != 1 else ''}"
    if calls and calls[-1].parse.final:
        return f"The run is over: {count}, the last one the final answer. Replay to watch it again."
    return f"The run stopped after {count}. Replay to watch it again."


def loop_view(
    key: str, frames: list[tuple[str, str, str]] | None = None, lit: str | None = None, caption: str = "", end: str = ""
) -> None:
    """Draw the loop; with `frames` the stages light one by one as the run went (then `end`'s words, unlit),
    else `lit` stays lit (or none, with `caption`)."""
    frames = [list(f) for f in frames or []]
    used = (["now"] if frames or lit else []) + [v for v in ("passed", "failed") if any(f[2] == v for f in frames)]
    _MOUNT(
        data={
            "names": STAGES,
            "frames": frames,
            "lit": lit,
            "caption": caption,
            "end": end,
            "palette": view_palette(),
            "legend": legend_entries(*used, words=LEGEND_WORDS),
        },
        key=key,
    )
