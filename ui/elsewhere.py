"""The same tools elsewhere: Qwen3's exact counts beside OpenAI's published estimate, and Anthropic's quoted overhead.

Drawn by the calculator and by lesson 7. The figures come from engine.wire.openai_tokens; the
Anthropic table is quoted from lessons/anthropic-tool-overhead.json with its source.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import streamlit as st

from engine.errors import BadInput
from engine.wire.openai_tokens import compare_tool_costs, estimate_openai_tokens
from ui.sections import section
from ui.words import LESSONS, lesson


@st.cache_data(show_spinner=False, max_entries=64)
def cost_rows(tools_json: str, messages_json: str) -> list[dict]:
    rows = compare_tool_costs(json.loads(tools_json), json.loads(messages_json))
    return [asdict(row) for row in rows]


def costs_elsewhere(tools: list[dict], messages: list[dict]) -> dict[str, dict] | str:
    """Each model's row by label ("Qwen3 native", "Qwen3 ReAct", "gpt-4o", "gpt-4"), or the reason there is none."""
    try:
        # key order matters: the template writes the tools as given, so the cache key keeps it
        rows = cost_rows(json.dumps(tools), json.dumps(messages))
    except BadInput as error:
        return str(error)
    return {row["label"]: row for row in rows}


@st.cache_data(show_spinner=False)
def cookbook_check() -> dict:
    """OpenAI's cookbook example counted by the same method, beside the totals the cookbook reports from the API."""
    data = json.loads((LESSONS / "openai-cookbook-example.json").read_text(encoding="utf-8"))
    ours = {m: estimate_openai_tokens(data["tools"], data["messages"], m).total for m in data["reported"]}
    return {"ours": ours, "reported": data["reported"], "source": data["source"]}


def draw_costs(rows: dict[str, dict]) -> None:
    """The comparison table: exact Qwen3 counts first, then the estimates, each saying how it was made."""
    st.table(
        [
            {
                "model": label,
                "tokenizer": row["tokenizer"],
                "the tools cost": row["tools_tokens"],
                "whole prompt": row["prompt_tokens"],
                "figure": "exact" if row["exact"] else "estimate",
            }
            for label, row in rows.items()
        ],
        hide_index=True,
    )
    methods = {row["exact"]: row["method"] for row in rows.values()}
    st.caption(
        f"Exact: {methods.get(True, '—')}. Estimate: {methods.get(False, '—')}. The tools cost is the prompt with the "
        "tools minus the same prompt without them, so what the format adds around the definitions counts too."
    )
    check = cookbook_check()
    shown = " and ".join(f"{n} on {m}" for m, n in check["ours"].items())
    reported = " and ".join(f"{n}" for n in check["reported"].values())
    st.caption(
        f"The method checked on the cookbook's own example (one weather tool, a system and a user message): it gives {shown}; "
        f"the cookbook reports that the API returned {reported}. Source: [{check['source']['page']}]({check['source']['url']})."
    )


def draw_anthropic() -> None:
    """Anthropic's per-model tool-use system prompt, its figures as published, with its source.

    (Its page's own sentence around the table points at tokens "listed above" on that page, so the
    table is shown without it: the lesson's words say what the figures are.)
    """
    data = json.loads((LESSONS / "anthropic-tool-overhead.json").read_text(encoding="utf-8"))
    source = data["source"]
    st.table(
        [
            {"model": r["model"], "tool_choice": r["tool_choice"], "system prompt tokens": r["system_prompt_tokens"]}
            for r in data["rows"]
        ],
        hide_index=True,
    )
    st.caption(
        f"As published by {source['publisher']}, [{source['page']}]({source['url']}). Not in these figures: {'; '.join(data['excludes'])}."
    )


def same_tools_elsewhere(tools: list[dict], messages: list[dict]) -> None:
    """The calculator's section: the comparison table and Anthropic's quoted table, self-contained."""
    text = lesson("same-tools-elsewhere")
    st.header(text["title"])
    st.markdown(text["intro"])
    rows = costs_elsewhere(tools, messages)
    if isinstance(rows, str):
        st.warning(f"No estimate for these tools: {rows}")
    else:
        draw_costs(rows)
    section("Anthropic")  # presenter mode: a screen of its own (called at a page's top level)
    st.subheader("Anthropic")
    st.markdown(text["anthropic"])
    draw_anthropic()
