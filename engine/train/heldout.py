"""How the shipped model does on prompts it never saw: exact calls, well-formed calls, and "no call" where none helps.

The prompts come from lessons/builtin-training.json's held-out lists, which engine/train/data.py
never puts into a training conversation: other words (" banana", "mississippi"), other phrasings,
other folders and cities, other questions no tool helps with. Each prompt is generated greedily
through the site's own path (engine.model.live.generate_turn) and parsed as the harness parses it,
in both styles. A model's mistakes are counted, never retried.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

from ..core.call_formats import parse_turn
from ..core.generation import GenerationSettings
from ..core.prompt import Request
from ..core.tokenizer import QwenTokenizer
from .data import STYLE_NAMES, Slots, call_conversation, conversation_words, tool_set, training_data

MAX_NEW_TOKENS = 80


@dataclass(frozen=True)
class Probe:
    """One held-out prompt and what a right turn does with it."""

    kind: Literal["count", "tool", "no-call"]  # count: count_letter; tool: another tool
    style: str
    tools: list[dict]
    question: str
    expected: tuple[str, dict] | None  # the exact call; None where the right turn calls nothing


@dataclass
class Verdict:
    probe: Probe
    text: str
    calls: list[tuple[str, dict]]
    errors: int  # malformed blocks

    @property
    def right(self) -> bool:
        if self.probe.expected is None:
            return not self.calls and not self.errors
        return self.errors == 0 and self.calls == [self.probe.expected]


@dataclass
class Figures:
    """Shares of held-out prompts, per style: the figures the provenance and docs/shipped-model.md quote."""

    count_exact: dict = field(
        default_factory=dict
    )  # style -> [right, of]: count_letter prompts with exactly the right call
    tool_exact: dict = field(
        default_factory=dict
    )  # style -> [right, of]: other tools' prompts with exactly the right call
    well_formed: dict = field(
        default_factory=dict
    )  # style -> [well-formed, of]: prompts that called, no malformed block
    no_call: dict = field(
        default_factory=dict
    )  # style -> [right, of]: questions no tool helps with, answered without a call
    mistakes: list[dict] = field(default_factory=list)  # every wrong turn: its prompt, its text

    def as_json(self) -> dict:
        return asdict(self)


def probes(tok: QwenTokenizer, count: int = 20, seed: int = 1) -> list[Probe]:
    """`count` count_letter prompts, a tool prompt per held-out tool question, and every held-out no-call question, per style."""
    data = training_data()
    rng = random.Random(seed)
    found: list[Probe] = []
    words = data["heldout_words"]
    for style in STYLE_NAMES:
        for index in range(count):
            word = words[index % len(words)]
            letter = rng.choice(word)
            phrasing = data["heldout_count_phrasings"][index % len(data["heldout_count_phrasings"])]
            found.append(
                Probe(
                    "count",
                    style,
                    list(tool_set("strawberry")),
                    phrasing.format(letter=letter, word=word),
                    ("count_letter", {"word": word, "letter": letter}),
                )
            )
        slots = Slots(rng, conversation_words(tok), heldout=True)
        for _ in range(count // 2):
            conv = call_conversation(rng, slots, style, heldout=True)
            if conv.expected[0] != "count_letter":
                found.append(Probe("tool", style, conv.tools, conv.messages[0]["content"], conv.expected))
        for question in data["heldout_facts"]:
            found.append(Probe("no-call", style, list(tool_set("strawberry")), question, None))
    return found


def word_probes(tok: QwenTokenizer, count: int = 20, seed: int = 1) -> list[Probe]:
    """`probes`' count_letter prompts asked again, each in one of the training's own phrasings: the same
    word, letter and style, so the two figures differ by the phrasing alone.

    A model right here and wrong there cannot read a phrasing it never saw; one wrong here too cannot
    copy a word no conversation named (its spelling, read off the word's row).
    """
    phrasings = training_data()["count_phrasings"]
    counted = [p for p in probes(tok, count, seed) if p.kind == "count"]
    return [
        replace(p, question=phrasings[index % len(phrasings)].format(**p.expected[1]))
        for index, p in enumerate(counted)
    ]


def judge(engine, probe: Probe) -> Verdict:
    """Generate the probe's turn greedily on the site's path and parse it as the harness does."""
    from ..model.live import generate_turn

    settings = GenerationSettings(max_new_tokens=MAX_NEW_TOKENS, temperature=0.0, top_k=0)
    request = Request([{"role": "user", "content": probe.question}], probe.tools, probe.style)
    text = generate_turn(engine, request, settings).text
    parsed = parse_turn(text, probe.tools, probe.style)
    calls = [(c.name, c.arguments) for c in parsed.calls]
    return Verdict(probe, text, calls, len(parsed.errors))


def measure_words(engine, count: int = 20, seed: int = 1) -> dict:
    """Style -> [right, of] over `word_probes`: held-out words asked in the training's phrasings."""
    table: dict = {}
    for probe in word_probes(engine.tokenizer, count, seed):
        row = table.setdefault(probe.style, [0, 0])
        row[0] += judge(engine, probe).right
        row[1] += 1
    return table


def measure(engine, count: int = 20, seed: int = 1) -> Figures:
    """The held-out figures of a loaded model."""
    figures = Figures()
    for probe in probes(engine.tokenizer, count, seed):
        verdict = judge(engine, probe)
        table = {"count": figures.count_exact, "tool": figures.tool_exact, "no-call": figures.no_call}[probe.kind]
        row = table.setdefault(probe.style, [0, 0])
        row[0] += verdict.right
        row[1] += 1
        if verdict.calls or verdict.errors:
            formed = figures.well_formed.setdefault(probe.style, [0, 0])
            formed[0] += verdict.errors == 0
            formed[1] += 1
        if not verdict.right:
            figures.mistakes.append({"style": probe.style, "question": probe.question, "text": verdict.text})
    return figures
