"""The site's model panels, each defined once: what it asks the model, with which settings, and what it shows.

A model panel is a place on a page where a model's figures appear: lesson 1's answer with and
without tools, lesson 3's call token by token, lesson 5's first token, lesson 6's masks and
its free and constrained decodes, the playground's episode. Each is one `Panel` here, with a
stable id (the lesson's id from lessons/index.json, then the panel, then its variant:
`the-model-writes-a-call.call.native`), its request, its generation settings and the kind of
run it makes. The pages read their request and settings from it, `python -m engine prepare`
(engine/packs/prepare.py) records every panel into a lesson pack under the panel's id with the
panel's settings, and engine/packs/panel_source.py refuses a recorded run whose settings
are no longer the panel's. Torch-free: a panel is data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Literal, get_args

from ..core.call_formats import lesson_format_names
from ..core.generation import GenerationSettings
from ..core.prompt import Request
from ..core.tokenizer import QwenTokenizer, load_tokenizer
from ..errors import BadInput
from ..harness.loop import load_scenario
from ..settings import LESSONS

# what a panel asks the model for: a turn, an episode in the harness, the first token's distribution, the mask's
# effect at each step of a reply, or a reply decoded with and without its constraint
PanelKind = Literal["generation", "episode", "first_token", "masks", "side_by_side"]
KINDS: tuple[PanelKind, ...] = get_args(PanelKind)
# lesson 6's tool_choice modes, in the order the page offers them
TOOL_CHOICES = ("auto", "required", "count_letter", "tokenize", "none")


@dataclass(frozen=True)
class Panel:
    """One model panel: its id, its lesson, what it asks and with which settings, and what it shows."""

    id: str  # "<lesson id>.<panel>[.<variant>…]": the run's id in a lesson pack too
    lesson: str  # the lesson's id in lessons/index.json
    kind: PanelKind  # what the model is asked to do
    shows: str  # what the panel shows, in a phrase ("the call, token by token")
    request: Request  # the prompt's request, in the panel's style
    generation: GenerationSettings | None = None  # decode settings; None for a single forward pass
    # with random weights, fewer new tokens: a random model never stops by itself
    random_max_new_tokens: int | None = None
    # what else the run depends on (style, max_turns, tool_choice, turn, question, top_k, scenario), recorded with it
    options: dict = field(default_factory=dict)
    reply: str = ""  # masks: the reply whose steps are masked, after the prompt
    workspace: str | None = None  # episode: the scenario whose files the tools see (None: no workspace)
    packed: bool = True  # False: a live-only panel that `prepare` does not record

    @property
    def style(self) -> str:
        return self.request.style

    @property
    def max_turns(self) -> int:
        return int(self.options.get("max_turns", 8))

    @property
    def top_k(self) -> int:
        return int(self.options.get("top_k", self.generation.top_k if self.generation else 0))

    def generation_for(self, random_weights: bool) -> GenerationSettings:
        """The decode settings for a model with real or random weights."""
        if self.generation is None:
            raise BadInput(f"panel {self.id} makes no generation (its kind is {self.kind})")
        if random_weights and self.random_max_new_tokens is not None:
            return replace(self.generation, max_new_tokens=self.random_max_new_tokens)
        return self.generation

    def recorded_settings(self, random_weights: bool) -> dict:
        """Everything the run depends on beyond its prompt, as a pack records it and checks it."""
        settings = self.generation_for(random_weights).as_json() if self.generation else {}
        return {**settings, **self.options}

    def prompt_ids(self, tok: QwenTokenizer | None = None) -> list[int]:
        """The token ids the model reads (for masks: the prompt, then the reply so far in full)."""
        from ..core.prompt import render

        tok = tok or load_tokenizer()
        ids = render(self.request, tok).ids
        return ids + tok.encode(self.reply) if self.reply else ids


def join_id(*parts: str) -> str:
    return ".".join(parts)


def _lesson_data(name: str) -> dict:
    return json.loads((LESSONS / name).read_text(encoding="utf-8"))


def why_call_a_tool_panels(strawberry) -> list[Panel]:
    """Lesson 1: the strawberry question without tools (native in both styles: no tools, no difference), and with
    tools, as an episode of up to 3 calls."""
    lesson = "why-call-a-tool"
    without = Panel(
        join_id(lesson, "no-tools"),
        lesson,
        "generation",
        "the answer without tools",
        Request(strawberry.messages, [], "native"),
        GenerationSettings(max_new_tokens=160, top_k=0),
        options={"tools": False},
    )
    return [without] + [
        Panel(
            join_id(lesson, "with-tools", style),
            lesson,
            "episode",
            "the question with tools",
            Request(strawberry.messages, strawberry.tools, style),
            GenerationSettings(max_new_tokens=80, top_k=0),
            options={"tools": True, "style": style, "max_turns": 3},
        )
        for style in lesson_format_names()
    ]


def writes_a_call_panels(strawberry) -> list[Panel]:
    """Lesson 3: the call, token by token with the top 8."""
    lesson = "the-model-writes-a-call"
    return [
        Panel(
            join_id(lesson, "call", style),
            lesson,
            "generation",
            "the call",
            Request(strawberry.messages, strawberry.tools, style),
            GenerationSettings(max_new_tokens=80, top_k=8),
            random_max_new_tokens=40,
            options={"style": style},
        )
        for style in lesson_format_names()
    ]


def when_not_to_call_panels(strawberry) -> list[Panel]:
    """Lesson 5: the first token, for each question (native: <tool_call> is one native token)."""
    lesson = "when-not-to-call"
    return [
        Panel(
            join_id(lesson, "first-token", question["id"]),
            lesson,
            "first_token",
            "this question",
            Request([{"role": "user", "content": question["content"]}], strawberry.tools, "native"),
            options={"question": question["id"], "top_k": 8},
        )
        for question in _lesson_data("when-not-to-call.json")["questions"]
    ]


def constrained_decoding_panels(strawberry) -> list[Panel]:
    """Lesson 6: the mask at each step of each reply, under each tool_choice; then free vs constrained decodes."""
    lesson = "constrained-decoding"
    native = Request(strawberry.messages, strawberry.tools, "native")
    masks = [
        Panel(
            join_id(lesson, "mask", turn["id"], mode),
            lesson,
            "masks",
            "this reply",
            native,
            options={"turn": turn["id"], "tool_choice": mode, "top_k": 8},
            reply=turn["text"],
        )
        for turn in _lesson_data("constrained-decoding.json")["turns"]
        for mode in TOOL_CHOICES
    ]
    return masks + [
        Panel(
            join_id(lesson, "side-by-side", mode),
            lesson,
            "side_by_side",
            "this question",
            native,
            GenerationSettings(max_new_tokens=48, temperature=0.7, seed=0, top_k=0),
            options={"tool_choice": mode},
        )
        for mode in TOOL_CHOICES
    ]


def playground_panels() -> list[Panel]:
    """The playground: the default scenario's episode on its files; a pack holds the native one only (a random
    model's ReAct episode runs all 8 turns of 256 tokens)."""
    scenario = load_scenario("missing-brace")
    return [
        Panel(
            join_id("playground", "episode", style),
            "playground",
            "episode",
            "this question and these files",
            Request(scenario.messages, scenario.tools, style),
            GenerationSettings(max_new_tokens=256),
            options={"scenario": scenario.name, "style": style, "max_turns": 8},
            workspace=scenario.name,
            packed=style == lesson_format_names()[0],
        )
        for style in lesson_format_names()
    ]


def _panels() -> list[Panel]:
    """Every model panel the pages show, in the order a pack records them: lesson by lesson, then the playground."""
    strawberry = load_scenario("strawberry")
    return [
        *why_call_a_tool_panels(strawberry),
        *writes_a_call_panels(strawberry),
        *when_not_to_call_panels(strawberry),
        *constrained_decoding_panels(strawberry),
        *playground_panels(),
    ]


@cache
def list_panels() -> tuple[Panel, ...]:
    """The registry: every model panel, once per process."""
    panels = tuple(_panels())
    assert len({p.id for p in panels}) == len(panels), "two panels share an id"
    return panels


def find_panel(*parts: str) -> Panel:
    """The panel whose id is the parts joined: find_panel("the-model-writes-a-call", "call", "native")."""
    wanted = join_id(*parts)
    for panel in list_panels():
        if panel.id == wanted:
            return panel
    known = ", ".join(p.id for p in list_panels() if p.lesson == parts[0]) or "none"
    raise BadInput(f"no model panel {wanted!r}; the panels of {parts[0]!r} are: {known}")
