"""engine/teaching/stop_words.py: the two stop-word scenes, scripted (no model)."""

from __future__ import annotations

import pytest

from engine.core.tokenizer import load_tokenizer
from engine.teaching.stop_words import apply_stop, cut_turn, load_stop_scenes

SCENES = {s.id: s for s in load_stop_scenes()}


@pytest.mark.parametrize(
    ("text", "stop", "kept", "at"),
    [
        ("Action Input: {}\nObservation: 2", "Observation:", "Action Input: {}\n", 17),
        ("Final Answer: 3", "Observation:", "Final Answer: 3", None),
        ("anything", None, "anything", None),
    ],
)
def test_apply_stop_returns_the_text_before_the_stop_word(text, stop, kept, at):
    assert apply_stop(text, stop) == (kept, at)


def test_without_a_stop_word_the_react_model_writes_its_own_observation_and_answers_from_it():
    scene = SCENES["react-writes-its-own-observation"]
    free, stopped = cut_turn(scene, False), cut_turn(scene, True)
    # nothing stops it: the invented result (2, not the tool's 3) and an answer from it reach the harness
    assert free.stopped_at is None and "Observation: 2" in free.kept and "Final Answer: There are 2" in free.kept
    assert free.past_stop.startswith("Observation: 2") and free.past_stop_tokens == load_tokenizer().count(
        free.past_stop
    )
    # the stop word ends the turn where the tool's result belongs: the call, and nothing invented
    assert stopped.stopped_at is not None and "Observation" not in stopped.kept and not stopped.inside_thinking
    assert [c.name for c in stopped.parse.calls] == ["count_letter"] and stopped.parse.calls[0].arguments[
        "word"
    ] == "strawberry"


def test_a_thinking_model_is_cut_mid_thought_by_the_same_stop_word():
    scene = SCENES["thinking-cut-mid-thought"]
    free, stopped = cut_turn(scene, False), cut_turn(scene, True)
    assert [c.name for c in free.parse.calls] == ["count_letter"]  # no stop word: the call after the thought
    assert stopped.inside_thinking and stopped.kept.startswith("<think>") and "</think>" not in stopped.kept
    assert stopped.parse.calls == [] and stopped.parse.errors  # half a thought, no call
    assert stopped.past_stop_tokens > 0
