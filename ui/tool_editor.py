"""The tool-definition editor of lesson 2 and the calculator: JSON text with add / remove / reset, checked by the engine.

A copied link carries the edited text (ui/state.py's `edits` parameter), so a teacher can share a tool set.
"""

from __future__ import annotations

import json

import streamlit as st

from engine.core.json_input import InputProblem, refuse_constant
from engine.core.tooldefs import MAX_DEFINITIONS_BYTES, TOOL_SETS, add_example_tool, find_tool_problems, load_tool_set
from ui.state import edits_from_url, edits_to_url, from_url, restore, to_url


def tool_set_text(name: str) -> str:
    return json.dumps(load_tool_set(name), indent=2, ensure_ascii=False)


# the editor's text is the definitions indented: allow it four times their compact limit
MAX_EDITOR_CHARS = 4 * MAX_DEFINITIONS_BYTES


def read_tools(text: str) -> tuple[list[dict] | None, list[str]]:
    """The tools in an editor's text, or None with the problems to show beside it (the text is never changed)."""
    if len(text) > MAX_EDITOR_CHARS:
        # refused before it is read: a pasted megabyte would be parsed, rendered and tokenized on every rerun
        return None, [
            f"The text is {len(text):,} characters; the limit is {MAX_EDITOR_CHARS:,}. "
            "Shorten the descriptions or remove tools, then the definitions are checked."
        ]
    try:
        data = json.loads(text, parse_constant=refuse_constant)  # NaN and Infinity are not JSON
    except json.JSONDecodeError as error:
        return None, [f"Not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}."]
    except InputProblem as problem:
        return None, [f"Not usable JSON: it {problem}."]
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


def start_tool_text(prefix: str, default_set: str = "strawberry") -> tuple[str, str]:
    """Seed the editor's text (a link's edits, else the learner's own from another page, else the shipped set); its keys.

    Safe to call before the editor is drawn, and again by it: it seeds only what the session lacks."""
    set_key, text_key = f"{prefix}_set", f"{prefix}_json"
    from_url(set_key, "tools", default_set, str, TOOL_SETS)
    if not edits_from_url(text_key, "edits") and not restore(text_key):
        st.session_state[text_key] = tool_set_text(st.session_state[set_key])
        st.session_state.pop(f"{text_key}_note", None)
    return set_key, text_key


def read_editor_tools(prefix: str, default_set: str = "strawberry") -> tuple[list[dict] | None, list[str]]:
    """The tools the editor holds now, for a page that draws what they cost above the editor itself."""
    _, text_key = start_tool_text(prefix, default_set)
    return read_tools(st.session_state[text_key])


def tool_editor(prefix: str, default_set: str = "strawberry", height: int = 420) -> tuple[list[dict] | None, list[str]]:
    """A JSON editor for tool definitions with add / remove / reset; returns (tools or None, problems).

    The problems are for the caller to show beside the field; the user's text always stays.
    """
    set_key, text_key = start_tool_text(prefix, default_set)

    def reset():
        st.session_state[text_key] = tool_set_text(st.session_state[set_key])
        st.session_state.pop(f"{text_key}_note", None)

    st.selectbox("Start from a shipped tool set", TOOL_SETS, key=set_key, on_change=reset)
    to_url(tools=st.session_state[set_key])
    buttons = st.columns(3)
    buttons[0].button(
        "Add a tool", key=f"{prefix}_add", on_click=_edit_tools, args=(text_key, add_example_tool), width="stretch"
    )
    buttons[1].button(
        "Remove the last tool",
        key=f"{prefix}_remove",
        on_click=_edit_tools,
        args=(text_key, lambda t: t[:-1]),
        width="stretch",
    )
    buttons[2].button("Reset", key=f"{prefix}_reset", on_click=reset, width="stretch")
    st.text_area("Tool definitions (JSON)", key=text_key, height=height)
    # the link carries the learner's text unless it is the shipped set's
    edited = st.session_state[text_key]
    too_long = edits_to_url("edits", None if edited == tool_set_text(st.session_state[set_key]) else edited)
    if too_long:
        st.caption(too_long)
    tools, problems = read_tools(st.session_state[text_key])
    note = st.session_state.get(f"{text_key}_note")
    if note and problems:
        problems = [*problems, note]
    return tools, problems
