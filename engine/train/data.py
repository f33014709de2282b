"""The synthetic conversations the shipped model learns from, rendered by the real chat template.

Each example is one assistant turn after a prompt that `engine.core.prompt.render` writes exactly as
the site writes it at run time (thinking off), in either style (native `<tool_call>` JSON or ReAct
lines): a call whose argument values are copied from the question, a short answer in words where
no tool helps, or, after a tool's result, a final answer that uses it. The loss falls on the turn's
own tokens and its closing `<|im_end|>`, never on the prompt.

A second kind, the spelling drill, is plain text (no template): " strawberry → "strawberry"" lines
over the vocabulary's common words. Inside a call a word is written without its leading space, so
" strawberry" (one token) must come out as "str", "aw", "berry"; the drill is where the model
learns each word's spelling, as a large model learns it in pretraining. A third, the copy drill,
is plain lines of a count question and its call, scored on the call's argument values: the copying
the conversations ask for, without their system prompt. The words, phrasings, paths and questions
that `engine.train.heldout` measures with never appear in a conversation or a copy drill.

Phrasings, facts and tool questions are data in lessons/builtin-training.json; the tools are the
lessons' own sets (lessons/tools/) plus lessons/tools/everyday.json.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from functools import cache
from typing import Literal

from ..core.call_formats import get_format, lesson_format_names
from ..core.prompt import Request, render
from ..core.tokenizer import IM_END, QwenTokenizer
from ..settings import LESSONS

STYLE_NAMES = lesson_format_names()
WORD_ID_LIMIT = (
    110_000  # the drill's words are the vocabulary's space-prefixed words below this id (" strawberry" is 72,600)
)
WORD_PATTERN = re.compile(r" [a-z]{3,14}")
TOOL_SETS = ("strawberry", "harness", "coding-agent", "everyday")
DRILL_TOKENS = 320  # tokens in one drill sequence
COPY_FROM = '{"word": "'  # a copy drill scores its call from here on: the word's pieces, then the letter


@dataclass(frozen=True)
class Sample:
    """One training sequence: its token ids and, for each, whether the loss falls on predicting it."""

    kind: Literal["call", "answer", "final", "drill", "copy"]  # drill and copy: plain text, scored on `candidates`
    ids: list[int]
    targets: list[bool]  # targets[i]: ids[i] is predicted (from ids[:i]) and counted in the loss

    @property
    def loss_tokens(self) -> int:
        return sum(self.targets)


@dataclass(frozen=True)
class Conversation:
    """A request and the assistant turn the model should write after it."""

    kind: Literal["call", "answer", "final"]  # answer: no tool helps; final: after a tool's result
    style: str
    tools: list[dict]
    messages: list[dict]
    turn: str  # the assistant's text, without the closing <|im_end|>
    expected: tuple[str, dict] | None = None  # the call the turn makes, if it makes one


@cache
def training_data() -> dict:
    return json.loads((LESSONS / "builtin-training.json").read_text(encoding="utf-8"))


@cache
def tool_set(name: str) -> tuple[dict, ...]:
    return tuple(json.loads((LESSONS / "tools" / f"{name}.json").read_text(encoding="utf-8")))


@cache
def cookbook_tools() -> tuple[dict, ...]:
    return tuple(json.loads((LESSONS / "openai-cookbook-example.json").read_text(encoding="utf-8"))["tools"])


def vocabulary_words(tok: QwenTokenizer) -> list[str]:
    """The drill's words: every token below WORD_ID_LIMIT that is a space and 3-14 lowercase letters."""
    found = []
    for token_id in range(WORD_ID_LIMIT):
        text = tok.token_text(token_id)
        if WORD_PATTERN.fullmatch(text):
            found.append(text[1:])
    return found


# -- slot values: what a question names and a call copies ----------------------------------
class Slots:
    """Draws the values that fill a question's {slots}: words, paths, patterns, cities, numbers."""

    def __init__(self, rng: random.Random, words: list[str], heldout: bool = False, composed: float = 0.0):
        self.rng, self.words, self.heldout = rng, words, heldout
        self.composed = composed  # the share of count questions phrased from parts (count_phrasing)
        data = training_data()
        self.cities = data["heldout_cities"] if heldout else data["cities"]
        self.folders = data["heldout_folders"] if heldout else data["folders"]
        self.data = data

    def word(self) -> str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.7:
            return rng.choice(self.words)
        if roll < 0.9:  # a compound of two words, often tokenized differently from either
            return rng.choice(self.words) + rng.choice(self.words)
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))

    def letter(self, word: str) -> str:
        if self.rng.random() < 0.8:
            return self.rng.choice(word)
        return self.rng.choice("abcdefghijklmnopqrstuvwxyz")

    def name(self) -> str:
        parts = [self.rng.choice(self.words) for _ in range(self.rng.randint(1, 2))]
        return "_".join(parts)

    def path(self) -> str:
        file = self.name() + self.rng.choice(self.data["extensions"])
        if self.rng.random() < 0.4:
            return file
        return f"{self.rng.choice(self.folders)}/{file}"

    def text(self) -> str:
        return " ".join(self.rng.choice(self.words) for _ in range(self.rng.randint(1, 4)))

    def fill(self, slot: str):
        """(the text the question shows, the value the call carries) for one slot."""
        rng = self.rng
        simple = {
            "word": self.word,
            "path": self.path,
            "text": self.text,
            "content": self.text,
            "subject": self.text,
            "body": self.text,
            "query": self.text,
            "old": self.text,
            "new": self.text,
            "symbol": self.name,
            "dir": lambda: rng.choice([*self.folders, "."]),
            "city": lambda: rng.choice(self.cities),
            "language": lambda: rng.choice(self.data["languages"]),
            "from_currency": lambda: rng.choice(self.data["currencies"]),
            "to_currency": lambda: rng.choice(self.data["currencies"]),
            "pattern": lambda: rng.choice(["def ", "class ", "import ", "TODO ", ""]) + rng.choice(self.words),
            "testfile": lambda: f"test_{rng.choice(self.words)}.py",
            "glob": lambda: rng.choice(["*", f"{rng.choice(self.folders)}/*"]) + rng.choice(self.data["extensions"]),
            "command": lambda: rng.choice(self.data["commands"]),
            "url": lambda: f"https://{rng.choice(self.words)}.org/{rng.choice(self.words)}",
            "to": lambda: f"{rng.choice(self.words)}@{rng.choice(self.words)}.com",
            "expression": lambda: f"{rng.randint(2, 999)} {rng.choice('+-*/')} {rng.randint(2, 99)}",
        }
        if slot == "symbol" and rng.random() < 0.5:
            value = rng.choice(self.data["symbols"])
            return value, value
        if slot in ("amount", "minutes"):
            value = rng.randint(1, 500) if slot == "amount" else rng.randint(1, 90)
            return str(value), value
        value = simple[slot]()
        return value, value


SLOT = re.compile(r"\{(\w+)\}")


def fill_question(template: str, arguments: dict, slots: Slots) -> tuple[str, dict]:
    """A question from `template` and the call arguments it asks for, each slot drawn once."""
    names = set(SLOT.findall(template)) | {n for v in arguments.values() for n in SLOT.findall(v)}
    drawn = {name: slots.fill(name) for name in sorted(names)}
    question = SLOT.sub(lambda m: str(drawn[m.group(1)][0]), template)
    args = {}
    for key, value in arguments.items():
        whole = SLOT.fullmatch(value)
        # "{amount}" alone keeps the value's JSON type (a number stays a number)
        args[key] = drawn[whole.group(1)][1] if whole else SLOT.sub(lambda m: str(drawn[m.group(1)][0]), value)
    return question, args


# -- conversations --------------------------------------------------------------------------
def count_answer(word: str, letter: str) -> str:
    count = word.count(letter)
    data = training_data()
    template = data["answer_count_once"] if count == 1 else data["answer_count"]
    return template.format(letter=letter, count=count, word=word)


def final_answer(name: str, arguments: dict, result: str) -> str:
    """The answer after a tool's result: it repeats the result the tool gave."""
    data = training_data()
    if name == "tokenize":
        return data["answer_tokens"].format(text=arguments.get("text", ""), result=result)
    return data["answer_result"].format(name=name, result=result)


def simulated_result(name: str, arguments: dict, slots: Slots) -> str:
    """What a tool would return: the true count for count_letter, plausible text for the rest."""
    from ..harness.tools import count_letter, tokenize

    if name == "count_letter":
        return count_letter(arguments["word"], arguments["letter"])
    if name == "tokenize":
        return tokenize(arguments["text"])
    rng = slots.rng
    if name in ("read_file", "fetch_url", "search_web", "translate", "define_word"):
        return slots.text()
    if name in ("list_files", "find_files"):
        return "\n".join(slots.path() for _ in range(rng.randint(1, 3)))
    if name == "write_file":
        return f"wrote {len(arguments.get('content', ''))} bytes to {arguments.get('path', '')}"
    if name == "run_tests":
        return rng.choice(
            [
                "[run_tests: exit code 0 (all tests passed)]\nRan 3 tests\nOK",
                "[run_tests: exit code 1 (tests failed)]\nFAILED test_add",
            ]
        )
    return str(rng.randint(1, 100)) if rng.random() < 0.5 else slots.text()


def offered_tools(rng: random.Random, needed: str | None) -> list[dict]:
    """A tool set to offer: one of the lessons' sets, or a draw from the everyday tools (with the needed one in it)."""
    everyday = list(tool_set("everyday"))
    for name in ("strawberry", "harness", "coding-agent"):
        if needed in {t["function"]["name"] for t in tool_set(name)} and rng.random() < 0.6:
            return list(tool_set(name))
    if needed == "get_current_weather":
        return list(cookbook_tools())
    pool = [
        t
        for t in everyday + list(tool_set("strawberry")) + list(tool_set("harness"))
        if t["function"]["name"] != needed
    ]
    chosen = rng.sample(pool, rng.randint(0, 3))
    if needed is not None:
        for source in (
            everyday,
            list(tool_set("strawberry")),
            list(tool_set("harness")),
            list(tool_set("coding-agent")),
        ):
            chosen += [t for t in source if t["function"]["name"] == needed][:1]
            if any(t["function"]["name"] == needed for t in chosen):
                break
    rng.shuffle(chosen)
    return chosen or list(tool_set("strawberry"))


def count_phrasing(rng: random.Random, composed: float = 0.0) -> str:
    """A count question's template, with {letter} and {word} slots: one of the fixed phrasings or, `composed` of the
    time, one put together from parts (a frame, a way to name the letter and the word, words before and after).

    Fourteen fixed phrasings teach the model where those fourteen put the word, and the shipped model copies other
    words of a question phrased otherwise; put together, the word sits at the start, the middle or the end, bare or
    quoted. A held-out phrasing is never made (engine/train/heldout.py measures with those). With `composed` 0, as
    the shipped model was trained, the draws are the fixed phrasings' alone (the same random stream as before)."""
    data = training_data()
    if not composed or rng.random() >= composed:
        return rng.choice(data["count_phrasings"])
    parts = data["count_parts"]
    held = data["heldout_count_phrasings"]
    while True:
        frame = rng.choice(parts["frames"]).format(
            L=rng.choice(parts["L"]), Ls=rng.choice(parts["Ls"]), W=rng.choice(parts["W"])
        )
        before = rng.choice(parts["before"])
        if before.endswith(", "):
            frame = frame[0].lower() + frame[1:]  # "Using the tool, how many …"
        phrasing = before + frame + rng.choice(parts["after"])
        if rng.random() < 0.1:
            phrasing = phrasing.lower()  # typed in a hurry; the slots' names are lower case already
        if phrasing not in held:
            return phrasing


def call_conversation(rng: random.Random, slots: Slots, style: str, heldout: bool = False) -> Conversation:
    """A question a tool helps with, and the call it asks for."""
    data = training_data()
    # counting letters is most of it: copying a word the question names is the hard part
    if rng.random() < 0.6:
        word = slots.word()
        letter = slots.letter(word)
        phrasing = rng.choice(data["heldout_count_phrasings"]) if heldout else count_phrasing(rng, slots.composed)
        question = phrasing.format(letter=letter, word=word)
        name, arguments = "count_letter", {"word": word, "letter": letter}
    else:
        questions = data["heldout_tool_questions" if heldout else "tool_questions"]
        name = rng.choice(sorted(questions))
        template, argument_template = rng.choice(questions[name])
        question, arguments = fill_question(template, argument_template, slots)
    tools = offered_tools(rng, name)
    turn = get_format(style).write_call(name, arguments)
    return Conversation("call", style, tools, [{"role": "user", "content": question}], turn, (name, arguments))


def lesson_conversation(rng: random.Random, slots: Slots, style: str) -> Conversation:
    """One of the lessons' own questions (lessons/builtin-training.json "lesson_calls"), its call, or after the result its answer."""
    question, tools, name, arguments = rng.choice(training_data()["lesson_calls"])
    offered = list(tool_set(tools))
    call = Conversation(
        "call",
        style,
        offered,
        [{"role": "user", "content": question}],
        get_format(style).write_call(name, arguments),
        (name, arguments),
    )
    if rng.random() < 0.6:
        return call
    result = simulated_result(name, arguments, slots)
    answer = (
        count_answer(arguments["word"], arguments["letter"])
        if name == "count_letter"
        else final_answer(name, arguments, result)
    )
    messages = [*call.messages, {"role": "assistant", "content": call.turn}, {"role": "tool", "content": result}]
    return Conversation("final", style, offered, messages, get_format(style).write_answer(answer))


def answer_conversation(rng: random.Random, style: str) -> Conversation:
    """A question no tool helps with, and a short answer in words."""
    question, answer = rng.choice(training_data()["facts"])
    tools = offered_tools(rng, None) if rng.random() < 0.9 else []
    return Conversation(
        "answer", style, tools, [{"role": "user", "content": question}], get_format(style).write_answer(answer)
    )


def final_conversation(rng: random.Random, slots: Slots, style: str) -> Conversation:
    """A call, the tool's result fed back as the harness feeds it, and the answer that uses it."""
    call = call_conversation(rng, slots, style)
    name, arguments = call.expected
    result = simulated_result(name, arguments, slots)
    if name == "count_letter":
        answer = count_answer(arguments["word"], arguments["letter"])
    else:
        answer = final_answer(name, arguments, result)
    messages = [*call.messages, {"role": "assistant", "content": call.turn}, {"role": "tool", "content": result}]
    return Conversation("final", style, call.tools, messages, get_format(style).write_answer(answer))


def conversation(rng: random.Random, slots: Slots) -> Conversation:
    style = rng.choice(STYLE_NAMES)
    roll = rng.random()
    if roll < 0.04:
        return lesson_conversation(rng, slots, style)
    if roll < 0.45:
        return call_conversation(rng, slots, style)
    # a third of the rest answers in words: with fewer, a model trained on many copy drills calls for everything
    if roll < 0.75:
        return answer_conversation(rng, style)
    return final_conversation(rng, slots, style)


# -- token sequences ------------------------------------------------------------------------
def conversation_sample(conv: Conversation, tok: QwenTokenizer) -> Sample:
    """The prompt's ids as the site renders them, then the turn's ids and <|im_end|>, the loss on the turn."""
    prompt = render(Request(conv.messages, conv.tools, conv.style), tok).ids
    turn = tok.encode(conv.turn) + [IM_END]
    return Sample(conv.kind, prompt + turn, [False] * len(prompt) + [True] * len(turn))


def drill_sample(rng: random.Random, words: list[str], tok: QwenTokenizer) -> Sample:
    """A plain-text spelling drill: ' word → "word"' lines, the loss on each spelling and its closing quote."""
    ids: list[int] = []
    targets: list[bool] = []
    while len(ids) < DRILL_TOKENS:
        word = rng.choice(words)
        shown = tok.encode(f" {word} →")
        spelled = tok.encode(f' "{word}"\n')
        ids += shown + spelled
        # the opening quote is not learned here (nothing predicts it); the spelling and the close are
        targets += [False] * (len(shown) + 1) + [True] * (len(spelled) - 1)
    return Sample("drill", ids[:DRILL_TOKENS], targets[:DRILL_TOKENS])


def copy_sample(rng: random.Random, slots: Slots, tok: QwenTokenizer, candidates: frozenset[int]) -> Sample:
    """A plain-text copy drill: count questions, each followed by its call, the loss on the call's argument values.

    The conversations ask the same, but behind a system prompt of tool schemas: a count conversation
    is about 290 tokens, a drill's line about 40, so a batch of drills holds several times more copies.
    """
    ids: list[int] = []
    targets: list[bool] = []
    while len(ids) < DRILL_TOKENS:
        word = slots.word()
        letter = slots.letter(word)
        question = count_phrasing(rng, slots.composed).format(letter=letter, word=word)
        call = get_format(rng.choice(STYLE_NAMES)).write_call("count_letter", {"word": word, "letter": letter})
        # the call up to the word's opening quote, then its values: only the values are scored
        head = tok.encode(f"{question}\n{call.partition(COPY_FROM)[0]}{COPY_FROM}")
        line = tok.encode(f"{question}\n{call}\n\n")
        if line[: len(head)] != head:
            continue  # the word merged with the quote before it: a rare tokenization, left out
        ids += line
        targets += [False] * len(head) + [token in candidates for token in line[len(head) :]]
    return Sample("copy", ids[:DRILL_TOKENS], targets[:DRILL_TOKENS])


def spelling_candidates(tok: QwenTokenizer) -> list[int]:
    """Every token a drill's line can predict: the pieces of each word written without its space, and what closes it.

    The drills' loss is a softmax over these (about 20,000) rather than all 151,936 rows: their
    question is which piece spells the word, and the conversations' full softmax teaches the rest.
    A copy drill's values end in a call's punctuation and a letter, so those are in too.
    """
    found = set(tok.encode('"\n'))
    for word in vocabulary_words(tok):
        found.update(tok.encode(f' "{word}"\n')[1:])
    for style in STYLE_NAMES:
        for letter in "abcdefghijklmnopqrstuvwxyz":
            call = get_format(style).write_call("count_letter", {"word": "x", "letter": letter})
            found.update(tok.encode(call.partition(COPY_FROM)[2] + "\n\n")[1:])
    return sorted(found)


def heldout_words() -> set[str]:
    return set(training_data()["heldout_words"])


def conversation_words(tok: QwenTokenizer) -> list[str]:
    """The words a training conversation may name: the drill's words less every held-out one."""
    held = heldout_words()
    return [w for w in vocabulary_words(tok) if w not in held]


def build_samples(
    count: int,
    seed: int,
    tok: QwenTokenizer,
    drill_share: float = 0.3,
    copy_share: float = 0.0,
    candidates: frozenset[int] | None = None,
    composed: float = 0.0,
) -> list[Sample]:
    """`count` samples drawn from `seed`: about `drill_share` spelling drills, `copy_share` copy drills, the rest conversations.

    `candidates` is spelling_candidates(tok), passed by a caller that already has it (training draws a pool
    of samples again and again); found here when copy drills need it and none is given.
    """
    rng = random.Random(seed)
    drill_words = vocabulary_words(tok)
    slots = Slots(rng, conversation_words(tok), composed=composed)
    if candidates is None:
        candidates = frozenset(spelling_candidates(tok)) if copy_share else frozenset()
    samples = []
    for _ in range(count):
        roll = rng.random()
        if roll < drill_share:
            samples.append(drill_sample(rng, drill_words, tok))
        elif roll < drill_share + copy_share:
            samples.append(copy_sample(rng, slots, tok, candidates))
        else:
            samples.append(conversation_sample(conversation(rng, slots), tok))
    return samples
