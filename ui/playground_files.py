"""The playground's file editors in session state: a scenario's files, or the edited files a link carries."""

import json

import streamlit as st

from engine.harness.loop import load_scenario
from ui.state import forget, unpack_edits


def load_files(name: str) -> None:
    """Put a scenario's files and question into the editors (a fresh start for that scenario)."""
    scenario = load_scenario(name)
    for key in [k for k in st.session_state if k.startswith(("playground_path_", "playground_text_"))]:
        forget(key)
    files = list(scenario.files.items())
    st.session_state["playground_files"] = list(range(len(files)))
    for n, (path, body) in enumerate(files):
        st.session_state[f"playground_path_{n}"] = path
        st.session_state[f"playground_text_{n}"] = body
    st.session_state["playground_question"] = scenario.messages[-1]["content"]
    st.session_state.pop("playground_result", None)


def load_linked_files() -> None:
    """A link's edited files (its `files` parameter: [[path, text], ...]) in place of the scenario's."""
    try:
        files = json.loads(unpack_edits(st.query_params.get("files", "")) or "null")
    except ValueError:
        return
    if isinstance(files, list) and all(
        isinstance(f, list) and len(f) == 2 and all(isinstance(x, str) for x in f) for f in files
    ):
        st.session_state["playground_files"] = list(range(len(files)))
        for n, (path, body) in enumerate(files):
            st.session_state[f"playground_path_{n}"], st.session_state[f"playground_text_{n}"] = path, body
