"""Two failures of stop words, as scripted scenes: a ReAct model writing its own Observation, a thinking model cut mid-thought.

A stop word ends a turn where the model writes it (a server's `stop`). ReAct needs `Observation:` as
one: without it, nothing ends the turn after `Action Input:`, and the model goes on to write the
tool's result itself, an invented one, and answers from it. With thinking on, the model may write
the same stop word inside its `<think>` block, and the turn is cut there: half a thought and no
call. [[reading-tool-calls]] quotes Qwen's own guidance ([[qwen3-chat-template]]) that stop-word
formats break with reasoning models for this reason.

The turns are scripted (lessons/stop-words.json), so the scenes need no model; `apply_stop` is what
a server does with `stop`, and the harness's own parser reads what is left.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from ..core.call_formats import parse_turn
from ..core.parse import ParseResult, split_reasoning
from ..core.tokenizer import load_tokenizer
from ..core.tooldefs import load_tool_set
from ..settings import LESSONS


@dataclass(frozen=True)
class StopScene:
    id: str
    title: str
    tools: str  # a tool set in lessons/tools/
    question: str
    thinking: bool  # the model thinks first (<think> ... </think>)
    stop: str  # the stop word
    turn: str  # what the model writes when nothing stops it
    lesson: str


@dataclass(frozen=True)
class StopCut:
    """One turn with or without its stop word: what the harness gets, and what became of the rest."""

    written: str  # what the model wrote (the whole turn, without a stop word)
    kept: str  # what the harness receives
    stopped_at: int | None  # where the stop word cut the turn (None: it ran to its end)
    inside_thinking: bool  # the cut fell inside the <think> block
    past_stop: str  # what the model writes from the stop word's place on: its own Observation, the rest of a thought
    past_stop_tokens: int  # how many tokens that is (spent and read when nothing stops it; never written when stopped)
    parse: ParseResult  # the harness's reading of `kept`


def apply_stop(text: str, stop: str | None) -> tuple[str, int | None]:
    """What a server returns for `text` under the stop word `stop` (the text before it; the word itself is not
    returned), and where it cut; with no stop word, the whole text."""
    at = text.find(stop) if stop else -1
    return (text, None) if at < 0 else (text[:at], at)


def cut_turn(scene: StopScene, use_stop: bool) -> StopCut:
    kept, at = apply_stop(scene.turn, scene.stop if use_stop else None)
    reasoning, content = split_reasoning(kept)
    inside = at is not None and reasoning is not None and content >= len(kept) and "</think>" not in kept
    place = scene.turn.find(scene.stop)
    past = scene.turn[place:] if place >= 0 else ""
    return StopCut(
        scene.turn,
        kept,
        at,
        inside,
        past,
        load_tokenizer().count(past) if past else 0,
        parse_turn(kept, load_tool_set(scene.tools), "react"),
    )


@cache
def load_stop_scenes() -> tuple[StopScene, ...]:
    rows = json.loads((LESSONS / "stop-words.json").read_text(encoding="utf-8"))
    return tuple(StopScene(**row) for row in rows)
