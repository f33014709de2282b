"""How run_tests confines visitors' code on this server, drawn from the engine's report (the words are the engine's)."""

from __future__ import annotations

import streamlit as st

from engine.sandbox.report import describe_confinement
from engine.sandbox.slots import slot_status


def confinement_lines() -> None:
    """The Set-up page's lines: the mode in force, why no stronger one, the whole run's limits, the slots busy now."""
    report = describe_confinement()
    st.markdown(f"**Mode: {report.mode}**")
    st.caption(report.summary)
    for line in report.why_not:
        st.caption(line)
    if report.limits:
        st.caption(report.limits)
    st.caption(slot_status().words())


def visitor_id() -> str | None:
    """Who is visiting, for a fair share of run_tests' slots: their address (several tabs are one visitor),
    else (a visitor on this machine, or behind a proxy on it) this session. Not a proof of anything: it
    only keeps one visitor's runs from holding every slot. Behind a proxy on another machine every
    visitor has the proxy's address, and shares one visitor's slots."""
    address = st.context.ip_address
    if address:
        return f"address {address}"
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    context = get_script_run_ctx()
    return f"session {context.session_id}" if context is not None else None
