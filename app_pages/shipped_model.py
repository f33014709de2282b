"""The shipped model: what it is, how it was trained (its loss curve), and what it does on prompts it never saw."""

import json

import plotly.graph_objects as go
import streamlit as st

from engine.settings import BUILTIN_FOLDER
from ui.words import lesson

text = lesson("shipped-model")
st.title(text["title"])
st.markdown(text["intro"])

provenance = BUILTIN_FOLDER / "PROVENANCE.md"
training = BUILTIN_FOLDER / "training.json"
if not provenance.is_file() or not training.is_file():
    st.warning(text["missing"])
    st.stop()

curve = json.loads(training.read_text(encoding="utf-8"))["curve"]
st.markdown(text["curve"])
figure = go.Figure()
for key, name in (("chat_loss", "conversations"), ("drill_loss", "spelling drill")):
    figure.add_trace(go.Scatter(x=[p["step"] for p in curve], y=[p[key] for p in curve], mode="lines", name=name))
figure.update_layout(xaxis_title="training step", yaxis_title="loss", height=320, margin=dict(t=10, b=40, l=50, r=10))
st.plotly_chart(figure, width="stretch")
# the provenance's own title is the page's
st.markdown(provenance.read_text(encoding="utf-8").split("\n", 1)[1])
