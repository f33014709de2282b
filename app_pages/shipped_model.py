"""The shipped model: what it is, how it was trained (its loss curve), and what it does on prompts it never saw."""

import json
import re

import plotly.graph_objects as go
import streamlit as st

from engine.settings import BUILTIN_FOLDER
from ui import screens
from ui.models import tokenizer
from ui.sections import scene
from ui.words import lesson, words

text = lesson("shipped-model")
st.title(text["title"])
st.markdown(text["intro"])

provenance = BUILTIN_FOLDER / "PROVENANCE.md"
training = BUILTIN_FOLDER / "training.json"
if not provenance.is_file() or not training.is_file():
    # no st.stop(): projected, the section bar is still drawn
    st.warning(text["missing"])
else:
    run = json.loads(training.read_text(encoding="utf-8"))
    curve = run["curve"]
    st.markdown(text["curve"])
    figure = go.Figure()
    # a run with copy drills scored them with the spelling drill (engine/train/training.py)
    drills = "drills (spelling, copying)" if run["config"].get("copy_share") else "spelling drill"
    for key, name in (("chat_loss", "conversations"), ("drill_loss", drills)):
        figure.add_trace(go.Scatter(x=[p["step"] for p in curve], y=[p[key] for p in curve], mode="lines", name=name))
    figure.update_layout(
        xaxis_title="training step", yaxis_title="loss", height=320, margin=dict(t=10, b=40, l=50, r=10)
    )
    st.plotly_chart(figure, width="stretch")
    # the provenance's own title is the page's; projected, each of its parts on screens of their own
    body = provenance.read_text(encoding="utf-8").split("\n", 1)[1]
    # the embedding's rows (the model's config) beside the tokenizer's vocabulary, the figure every other page gives
    rows = json.loads((BUILTIN_FOLDER / "config.json").read_text(encoding="utf-8"))["vocab_size"]
    vocab = tokenizer().vocab_size
    unexplained = rows != vocab
    for number, part in enumerate(re.split(r"^## ", body, flags=re.MULTILINE)):
        title, _, markdown = part.partition("\n") if number else ("Its size and architecture", "", part)
        heading = [f"## {title}"] if number else []
        groups = screens.pack(heading + screens.blocks(markdown), screens.lines)
        for k, group in enumerate(groups):
            # a heading's note in brackets stays on the page, not in the section's name
            scene(title.split(" (")[0] + (f" ({k + 1} of {len(groups)})" if len(groups) > 1 else ""), heading=None)
            for markdown_text in screens.texts(group):
                st.markdown(markdown_text)
                if unexplained and f"{rows:,} rows" in markdown_text:
                    st.caption(words("shipped-model", "rows and tokens", rows=rows, vocab=vocab, padding=rows - vocab))
                    unexplained = False
