"""Streamed token strips: runs of whitespace collapsed with their count, and O(n) page work for n tokens."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.core.tokenizer import load_tokenizer
from ui.stream import MIN_RUN, collapse_runs

TOK = load_tokenizer()
NEWLINE = TOK.encode("\n")[0]
SPACE = TOK.encode(" ")[0]
WORD = TOK.encode("straw")[0]


def pieces(ids):
    return [(i, TOK.token_text(i)) for i in ids]


@pytest.mark.parametrize(
    "ids, kept, counts",
    [
        pytest.param([NEWLINE] * 80, [NEWLINE], ["×80"], id="eighty-newlines"),
        pytest.param([NEWLINE] * (MIN_RUN - 1), [NEWLINE] * (MIN_RUN - 1), [None] * (MIN_RUN - 1), id="short-run-kept"),
        pytest.param([WORD] * 6, [WORD] * 6, [None] * 6, id="repeated-word-kept"),
        pytest.param(
            [WORD, SPACE, SPACE, SPACE, SPACE, WORD], [WORD, SPACE, WORD], [None, "×4", None], id="spaces-between-words"
        ),
        pytest.param([NEWLINE] * 5 + [SPACE] * 5, [NEWLINE, SPACE], ["×5", "×5"], id="two-runs"),
        pytest.param([], [], [], id="empty"),
    ],
)
def test_whitespace_runs_collapse_into_one_box_with_a_count(ids, kept, counts):
    got, got_counts = collapse_runs(pieces(ids))
    assert [p[0] for p in got] == kept and got_counts == counts


@given(st.lists(st.sampled_from([NEWLINE, SPACE, WORD]), max_size=60))
def test_collapsing_loses_no_token(ids):
    kept, counts = collapse_runs(pieces(ids))
    expanded = []
    for piece, count in zip(kept, counts, strict=True):
        expanded.extend([piece[0]] * (int(count[1:]) if count else 1))
    assert expanded == ids


@pytest.mark.slow
def test_lesson_1_streams_the_run_without_tools_and_ends_with_one_full_strip_of_its_tokens(page_app, tiny_engine):
    from engine.core.generation import GenerationSettings
    from engine.core.prompt import Request
    from engine.harness.loop import load_scenario
    from engine.model.live import generate_turn
    from ui.draw import token_strip

    at = page_app("app_pages/why_call_a_tool.py", timeout=180, model="tiny")
    at.button(key="why_call_a_tool_ask").click().run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    # the same greedy run outside the page: the page's final strip is exactly its tokens, runs collapsed
    scenario = load_scenario("strawberry")
    alone = generate_turn(
        tiny_engine, Request(scenario.messages, [], "native"), GenerationSettings(max_new_tokens=160, top_k=0)
    )
    kept, counts = collapse_runs([(s.id, s.token) for s in alone.steps])
    wanted = token_strip(kept, extra=counts, special=[TOK.is_special(p[0]) for p in kept], collapse=False)
    assert wanted in [m.value for m in at.markdown]
    captions = [c.value for c in at.caption if "tokens, finish:" in c.value]
    assert captions[0] == f"{alone.output_tokens} tokens, finish: {alone.finish}"


@pytest.mark.slow
def test_the_playgrounds_live_turns_are_token_strips_with_whitespace_runs_counted(page_app):
    from ui.stream import strip_html

    at = page_app("app_pages/playground.py", timeout=180, model="tiny", mode="live", scenario="strawberry")
    at.button(key="playground_run").click().run(timeout=600)
    assert not at.exception, [e.value for e in at.exception]
    calls = at.session_state["playground_result"].calls
    shown = [m.value for m in at.markdown]
    for call in calls:
        assert call.turn.steps, "a live turn keeps its tokens"
        assert strip_html([(s.id, s.token) for s in call.turn.steps], TOK.is_special) in shown
    # the tiny model's turns are never drawn as code blocks of blank lines: only tool results are code
    assert len(at.code) == sum(len(call.results) for call in calls) + len(
        at.session_state["playground_result"].files_after
    )
