"""The playground's file editors in session state: a scenario's files, or the edited files a link carries; the
editors drawn; and what a run did, drawn: one call, the ledger, the files as the run left them.

A link is a stranger's input: its `files` value is read with bounds on its size (ui/state.py's
unpack_edits), its nesting (engine/core/json_input.py) and its count of files, and past any of
them the page shows the scenario's own files with a sentence saying why.
"""

import streamlit as st

from engine.core.json_input import InputProblem, read_json_text
from engine.core.markdown_text import escape_markdown
from engine.harness.loop import load_scenario
from engine.harness.playground import cap_for_display
from ui.chart_words import chart_caption
from ui.charts import ledger_figure
from ui.literal import draw_reply
from ui.models import TINY_LABEL, tokenizer
from ui.numbers import format_count
from ui.playground_run import PlaygroundResult
from ui.sections import screen_size
from ui.state import forget, restore, unpack_edits
from ui.stream import strip_html
from ui.words import words

MAX_LINK_FILES = 64  # files a link may carry: a scenario has a handful, and the page draws an editor for each
LINK_PROBLEM = "playground_link_problem"  # session key: why a link's files were not used, shown above the editors
THE_SCENARIOS = "The scenario's own files are shown instead."


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
    st.session_state.pop(LINK_PROBLEM, None)


def workspace_entries(slots: list[int]) -> list[tuple[str, str]]:
    """The workspace's files as they stand, (path, text) per slot, read before Run is drawn; the learner's files
    and question survive a visit to another page."""
    for slot in slots:
        restore(f"playground_path_{slot}")
        restore(f"playground_text_{slot}")
    restore("playground_question")
    return [
        (st.session_state.get(f"playground_path_{s}", ""), st.session_state.get(f"playground_text_{s}", ""))
        for s in slots
    ]


def read_linked_files(value: str) -> tuple[list[tuple[str, str]], str | None]:
    """The [path, text] pairs a link's `files` value carries, or none and a sentence saying why they cannot be used."""
    text = unpack_edits(value)
    if text is None:
        return [], f"This link's files cannot be read: the link may be cut short or too long. {THE_SCENARIOS}"
    try:
        files = read_json_text(text)
    except InputProblem as problem:
        return [], f"This link's files cannot be read: their text {problem}. {THE_SCENARIOS}"
    if not isinstance(files, list) or not all(
        isinstance(f, list) and len(f) == 2 and all(isinstance(x, str) for x in f) for f in files
    ):
        return [], f"This link's files are not a list of [path, text] pairs. {THE_SCENARIOS}"
    if len(files) > MAX_LINK_FILES:
        return [], f"This link carries {len(files):,} files; a link may carry up to {MAX_LINK_FILES}. {THE_SCENARIOS}"
    return [(path, body) for path, body in files], None


def load_linked_files() -> None:
    """A link's edited files (its `files` parameter: [[path, text], ...]) in place of the scenario's."""
    value = st.query_params.get("files")
    if value is None:
        return
    files, problem = read_linked_files(value)
    if problem:
        st.session_state[LINK_PROBLEM] = problem
        return
    st.session_state["playground_files"] = list(range(len(files)))
    for n, (path, body) in enumerate(files):
        st.session_state[f"playground_path_{n}"], st.session_state[f"playground_text_{n}"] = path, body


def draw_call(number: int, call, tiny: bool, unseen: list | None = None) -> None:
    """One call of a run (loop.Run.calls): what the model wrote, what the harness made of it, what went back, and
    which of its values the model was never shown (engine/harness/grounding.py's UnseenValue)."""
    with st.container(border=True):
        st.markdown(
            f"**Call {number}** · {call.cost.input_tokens:,} tokens in · {call.cost.output_tokens:,} out"
            + (" · cut off at the token limit" if call.turn.finish == "length" else "")
        )
        if (
            call.turn.steps
        ):  # a model's turn, live or recorded: its tokens, whitespace shown as ␣/↵ and long runs counted
            if tiny:
                st.caption(f"Tiny model, {TINY_LABEL}.")
            st.markdown(
                strip_html([(s.id, s.token) for s in call.turn.steps], tokenizer().is_special), unsafe_allow_html=True
            )
        else:
            draw_reply(call.turn.text, None)
        if call.parse.final:
            st.success("No call: the harness takes this as the final answer.")
        for item in call.results:
            if item.ok:
                st.markdown(f"✅ ran `{item.name}` → result:")
            else:
                st.markdown(f"❌ block {item.block + 1} → error sent back:")
            st.code(item.text[:2000] or "(empty)", language=None, wrap_lines=True)
        for value in unseen or []:
            shown = value.value if len(value.value) <= 40 else value.value[:40] + "…"
            st.info(
                words(
                    "playground", "not copied", tool=value.tool, argument=value.argument, value=escape_markdown(shown)
                ),
                icon="🔎",
            )


def draw_files_after(before: dict, after: dict) -> None:
    """The workspace as the run left it: each file new, changed or unchanged (the changed ones open)."""
    shown = cap_for_display(after)
    for path, body in shown.files.items():
        was = before.get(path)
        tag = "new" if was is None else ("changed" if was != body else "unchanged")
        with st.expander(f"{escape_markdown(path)} ({tag})", expanded=tag != "unchanged"):
            st.code(body, language=None)
    if shown.note:
        st.caption(shown.note)


def add_file() -> None:
    """One more empty file editor, with a name no other editor has."""
    slots = st.session_state["playground_files"]
    new = max(slots, default=-1) + 1
    st.session_state[f"playground_path_{new}"] = f"notes{new}.txt"
    st.session_state[f"playground_text_{new}"] = ""
    st.session_state["playground_files"] = [*slots, new]


def remove_file(slot: int) -> None:
    st.session_state["playground_files"] = [s for s in st.session_state["playground_files"] if s != slot]


def draw_workspace(slots: list[int], problems: list[InputProblem]) -> None:
    """The workspace's files, editable: a name and contents per file, why a file is left out, Add and Remove."""
    problem_at = {p.index: p.message for p in problems}
    for position, slot in enumerate(slots):
        name_column, body_column = st.columns([2, 5])
        with name_column:
            st.text_input("File name", key=f"playground_path_{slot}")
            if position in problem_at:
                st.error(problem_at[position])
            st.button("Remove", key=f"playground_remove_{slot}", on_click=remove_file, args=(slot,))
        with body_column:
            st.text_area("Contents", key=f"playground_text_{slot}", height=screen_size(160, 110))
    st.button("Add a file", key="playground_add", on_click=add_file)
    if not slots:
        st.caption("(no files: the tools will see an empty folder)")


def draw_ledger(result: PlaygroundResult) -> None:
    """What the run cost, call by call, and why it stopped (or where the script met a workspace it did not expect)."""
    calls = result.calls
    a, b, c = st.columns(3)
    a.metric("Calls", len(calls))
    b.metric("Input tokens", format_count(sum(s.cost.input_tokens for s in calls)))
    c.metric("Output tokens", format_count(sum(s.cost.output_tokens for s in calls)))
    chart = ledger_figure([s.cost for s in calls], 300)
    st.plotly_chart(chart, key="playground_ledger_chart")
    chart_caption(chart, "call {}")
    departure = result.departure
    if departure is None:
        answer = f" The answer: {result.answer}" if result.answer else ""
        st.info(f"The run stopped: {result.stop}.{answer}")
        return
    tool = f"`{departure.tool}`" if departure.tool else "the harness"
    st.warning(words("playground", "script departed", call=departure.call, tool=tool))
    assumed, got = st.columns(2)
    assumed.caption("The script assumed")
    assumed.code(departure.expected[:2000] or "(empty)", language=None, wrap_lines=True)
    got.caption("Your workspace gave")
    got.code(departure.actual[:2000] or "(empty)", language=None, wrap_lines=True)
