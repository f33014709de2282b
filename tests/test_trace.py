"""Recorded runs: a trace written from a live run replays to the same steps and says where it came from.

Traces here come from the tiny random-weights model and live only in pytest's tmp dirs.
"""

from __future__ import annotations

import json

import pytest

from engine.core.generation import GenerationSettings
from engine.core.prompt import Request
from engine.errors import BadInput
from engine.model.live import generate_turn
from engine.packs.trace import load_trace, record_trace

MESSAGES = [{"role": "user", "content": "How many r are in strawberry?"}]


@pytest.fixture(scope="module")
def recorded(tiny_engine, tmp_path_factory):
    request = Request(MESSAGES)
    generation = generate_turn(
        tiny_engine, request, GenerationSettings(max_new_tokens=6, temperature=0.9, seed=4, top_k=4)
    )
    path = record_trace(tmp_path_factory.mktemp("traces") / "run.json", generation, request)
    return generation, path


def test_a_replayed_trace_has_the_same_steps(recorded):
    generation, path = recorded
    trace = load_trace(path)
    assert trace.steps == generation.steps
    assert list(trace.replay()) == generation.steps
    assert (trace.text, trace.finish, trace.prompt_tokens) == (
        generation.text,
        generation.finish,
        generation.prompt_tokens,
    )
    assert trace.settings == generation.settings and trace.model == generation.model
    assert trace.prompt_text == generation.prompt_text and trace.messages == MESSAGES


def test_a_replayed_trace_says_what_recorded_it_and_when(recorded):
    trace = load_trace(recorded[1])
    assert trace.source.startswith("recorded with tiny (fp32, cpu; random weights")
    assert trace.recorded_at[:4] in trace.source and trace.source.endswith("UTC")
    assert trace.as_generation().extra["source"] == trace.source
    assert trace.as_generation().steps == recorded[0].steps


def test_a_trace_keeps_the_software_that_ran_it(recorded):
    data = json.loads(recorded[1].read_text(encoding="utf-8"))
    assert {"torch", "transformers"} <= set(data["software"])
    assert data["model"]["dtype"] == "float32" and data["model"]["device"] == "cpu"


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not valid JSON"),
        ('{"steps": []}', "is not a trace"),
        ('{"format": "tool-calling-explainer trace", "version": 99}', "version 99"),
        ('{"format": "tool-calling-explainer trace", "version": 1, "model": {}}', "incomplete or damaged"),
    ],
)
def test_a_file_that_is_not_a_trace_gets_a_message_saying_so(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BadInput, match=message):
        load_trace(path)


def test_a_missing_trace_file_says_so(tmp_path):
    with pytest.raises(BadInput, match="cannot read the trace"):
        load_trace(tmp_path / "nope.json")
