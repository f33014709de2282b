"""The lesson pack a page replays when no model is loaded: an upload, QWEN_PACK, or assets/packs/.

An uploaded pack lives in the uploader's session only: the site is a shared classroom server,
and one learner's upload must not change what the others see. A pack named by the server
(QWEN_PACK, a folder or a .zip; else the first in assets/packs/) is read once per process and
again when its file changes. A pack recorded with random weights is refused unless the server
runs with QWEN_ALLOW_RANDOM_PACKS=1 (the tests do), and then every panel says so.
"""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from engine.harness.loop import Run
from engine.packs.pack import MANIFEST, MAX_UPLOAD_BYTES, Pack, PackError, PackRun, megabytes
from engine.packs.panel_source import PREPARE, other_prompt_reason
from engine.packs.reader import find_shipped_pack, read_pack, read_pack_bytes
from engine.packs.replay import replay_episode
from engine.teaching.panels import Panel
from ui.words import ROOT, words

SHIPPED = ROOT / "assets" / "packs"


def random_packs_allowed() -> bool:
    return os.environ.get("QWEN_ALLOW_RANDOM_PACKS") == "1"


def _stamp(path: Path) -> float:
    """When the pack last changed (a folder: its manifest), so an edited pack is read again."""
    target = path / MANIFEST if path.is_dir() else path
    try:
        return target.stat().st_mtime
    except OSError:
        return 0.0


@st.cache_resource(show_spinner="Reading the lesson pack…", max_entries=4)
def _read_server_pack(where: str, stamp: float, allow_random: bool) -> tuple[Pack | None, str | None]:
    try:
        if where:
            return read_pack(where, allow_random), None
        return find_shipped_pack(SHIPPED, allow_random), None
    except PackError as error:
        return None, str(error)


def server_pack() -> tuple[Pack | None, str | None]:
    """The server's pack (QWEN_PACK, else assets/packs/) and, when it cannot be used, why."""
    where = os.environ.get("QWEN_PACK", "")
    if where:
        stamp = _stamp(Path(where).expanduser())
    else:
        stamp = max((_stamp(p) for p in SHIPPED.iterdir()), default=0.0) if SHIPPED.is_dir() else 0.0
    return _read_server_pack(where, stamp, random_packs_allowed())


def for_learners(reason: str) -> str:
    """An engine's reason as a lesson page shows it: the command that records a pack is on the Set-up page."""
    return reason.replace(f"`{PREPARE}`", "the command on the Set-up page")


def active_pack() -> Pack | None:
    """This session's upload if there is one, else the server's pack."""
    uploaded = st.session_state.get("pack_upload")
    return uploaded if uploaded is not None else server_pack()[0]


def replay_episode_here(
    run: PackRun, panel: Panel, messages: list[dict], tools: list[dict], workspace=None
) -> Run | None:
    """A recorded episode played again through the harness on what the page asks now (its messages, tools and
    workspace), if every call's prompt is still the recorded one; else the panel says so and it is None."""
    played, same = replay_episode(run, messages, tools, panel.style, workspace, panel.max_turns)
    if same:
        return played
    st.warning(for_learners(other_prompt_reason(panel)))
    return None


def _take_upload() -> None:
    """Check the uploaded file; a good pack replaces this session's, a bad one changes nothing."""
    upload = st.session_state.get("pack_file")
    if upload is None:
        return
    try:
        if upload.size > MAX_UPLOAD_BYTES:
            raise PackError(f"the file is {megabytes(upload.size)}; a pack may be up to {megabytes(MAX_UPLOAD_BYTES)}")
        pack = read_pack_bytes(upload.getvalue(), upload.name, random_packs_allowed())
    except PackError as error:
        st.session_state["pack_error"] = f"{upload.name}: {error}"
        return
    st.session_state["pack_upload"] = pack
    st.session_state.pop("pack_error", None)


def pack_lines() -> None:
    """The Set-up page's lesson-pack lines: which pack is in use, and the upload."""
    uploaded = st.session_state.get("pack_upload")
    pack, problem = server_pack()
    if uploaded is not None:
        st.caption(f"Lesson pack (yours): {uploaded.label()}")
        if st.button("Stop using my pack", key="pack_forget"):
            st.session_state.pop("pack_upload", None)
            st.rerun()
    elif pack is not None:
        st.caption(f"Lesson pack: {pack.label()}. With no model loaded, the model panels show its recorded runs.")
    elif problem:
        st.caption(f"The server's lesson pack cannot be used: {problem}")
    else:
        st.caption("No lesson pack is in use.")
    with st.expander("Upload a lesson pack"):
        st.caption(words("packs", "upload"))
        st.file_uploader(
            "Lesson pack (.zip)",
            type=["zip"],
            key="pack_file",
            on_change=_take_upload,
            max_upload_size=MAX_UPLOAD_BYTES // (1024 * 1024),
        )
    if st.session_state.get("pack_error"):
        st.error(st.session_state["pack_error"])
