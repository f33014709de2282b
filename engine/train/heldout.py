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
from .data import STYLE_NAMES, Slots, call_conversation, tool_set, training_data, vocabulary_words
from .drills import COPY_FROM

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
        return self.errors == 0 and len(self.calls) == 1 and same_call(self.calls[0], self.probe.expected)


def same_call(written: tuple[str, dict], expected: tuple[str, dict]) -> bool:
    """The call asked for: its name and arguments exactly, but a count's letter in either case ("R" for "r")."""
    (name, arguments), (want_name, want) = written, expected
    if name != want_name or set(arguments) != set(want):
        return False
    for key, value in want.items():
        got = arguments[key]
        if name == "count_letter" and key == "letter" and isinstance(got, str) and isinstance(value, str):
            got, value = got.lower(), value.lower()
        if got != value:
            return False
    return True


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
    # style -> [right, of] over the count prompts: the word's first piece as the call writes it (the rest may be wrong)
    first_piece: dict = field(default_factory=dict)
    # style -> [right, of]: the same held-out words asked in the training's own phrasings (word_probes)
    count_training_phrasings: dict = field(default_factory=dict)
    # style -> [right, of]: count and fact questions asked with no tool in the prompt, answered with no call
    no_tools: dict = field(default_factory=dict)
    # style -> [right, of]: the lessons' own questions (lessons/builtin-training.json "lesson_calls"), exactly their call
    lesson_calls: dict = field(default_factory=dict)

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
        # the held-out tools' slots draw from the vocabulary less the held-out words alone, as they always have, so
        # that every model is measured on the same prompts
        slots = Slots(rng, [w for w in vocabulary_words(tok) if w not in words], heldout=True)
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


def untooled_probes(count: int = 20, seed: int = 2) -> list[Probe]:
    """Questions asked with no tool in the prompt, per style: lesson 1's strawberry question, held-out count
    questions and held-out facts. The right turn calls nothing (a count is guessed in words)."""
    data = training_data()
    rng = random.Random(seed)
    lesson_question = data["lesson_calls"][0][0]
    found = []
    for style in STYLE_NAMES:
        found.append(Probe("no-call", style, [], lesson_question, None))
        for index in range(count):
            word = data["heldout_words"][index % len(data["heldout_words"])]
            phrasing = data["heldout_count_phrasings"][index % len(data["heldout_count_phrasings"])]
            found.append(Probe("no-call", style, [], phrasing.format(letter=rng.choice(word), word=word), None))
        found += [Probe("no-call", style, [], question, None) for question in data["heldout_facts"][: count // 2]]
    return found


def lesson_probes() -> list[Probe]:
    """The lessons' own questions with their tool sets, per style, each with the call it asks for."""
    seen, found = set(), []
    for style in STYLE_NAMES:
        for question, tools, name, arguments in training_data()["lesson_calls"]:
            if (style, question) not in seen:
                seen.add((style, question))
                found.append(Probe("tool", style, list(tool_set(tools)), question, (name, arguments)))
    return found


def first_piece(tok: QwenTokenizer, word) -> int | None:
    """The first token of `word` as a call writes it, after its opening quote (None for a value that is no word)."""
    if not isinstance(word, str) or not word:
        return None
    head = tok.encode(COPY_FROM)
    ids = tok.encode(COPY_FROM + word)
    return ids[len(head)] if ids[: len(head)] == head and len(ids) > len(head) else None


def judge(engine, probe: Probe) -> Verdict:
    """Generate the probe's turn greedily on the site's path and parse it as the harness does."""
    from ..model.live import generate_turn

    settings = GenerationSettings(max_new_tokens=MAX_NEW_TOKENS, temperature=0.0, top_k=0)
    request = Request([{"role": "user", "content": probe.question}], probe.tools, probe.style)
    text = generate_turn(engine, request, settings).text
    # with no tool offered, no style's instructions are in the prompt and the answer is plain words in every style
    parsed = parse_turn(text, probe.tools, probe.style if probe.tools else "native")
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


def tally(table: dict, style: str, right: bool) -> None:
    row = table.setdefault(style, [0, 0])
    row[0] += right
    row[1] += 1


def measure(engine, count: int = 20, seed: int = 1) -> Figures:
    """The held-out figures of a loaded model: the held-out prompts, then the same words in training phrasings, then
    questions with no tool offered, then the lessons' own calls."""
    figures = Figures()
    tok = engine.tokenizer
    for probe in word_probes(tok, count, seed):
        tally(figures.count_training_phrasings, probe.style, judge(engine, probe).right)
    for probe in untooled_probes(count):
        tally(figures.no_tools, probe.style, judge(engine, probe).right)
    for probe in lesson_probes():
        tally(figures.lesson_calls, probe.style, judge(engine, probe).right)
    for probe in probes(tok, count, seed):
        verdict = judge(engine, probe)
        if probe.kind == "count":
            written = [arguments.get("word") for name, arguments in verdict.calls if name == "count_letter"][:1]
            want = first_piece(tok, probe.expected[1]["word"])
            tally(figures.first_piece, probe.style, bool(written) and first_piece(tok, written[0]) == want)
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
