"""The synthetic conversations the shipped model learns from, rendered by the real chat template.

Each example is one assistant turn after a prompt that `engine.core.prompt.render` writes exactly as
the site writes it at run time (thinking off), in either style (native `<tool_call>` JSON or ReAct
lines): a call whose argument values are copied from the question, a short answer in words where
no tool helps, or, after a tool's result, a final answer that uses it. The loss falls on the turn's
own tokens and its closing `<|im_end|>`, never on the prompt.

Some conversations offer no tool at all, as a real model's training has many: there the same
questions are answered in words (a count is a guess, as Qwen3-1.7B guesses 2 for strawberry), so
the model learns that a call needs a tool in the prompt. The plain-text drills beside these
(spelling, copying) are engine/train/drills.py's; `build_samples` mixes the two. The words,
phrasings, paths and questions that `engine.train.heldout` measures with, and the words of the
strawberry suite other than strawberry, never appear in a conversation or a drill.

Phrasings, facts and tool questions are data in lessons/builtin-training.json; the tools are the
lessons' own sets (lessons/tools/) plus lessons/tools/everyday.json.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
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
CAPITALISED = 0.1  # share of a conversation's words written with a capital, kept as written in the call
SUITE_WORD = re.compile(r"the word (\w+)")


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

    def __init__(
        self,
        rng: random.Random,
        words: list[str],
        heldout: bool = False,
        composed: float = 0.0,
        capitalised: bool = False,
        pieces: Sequence[str] = (),
        made_up: float = 0.0,
    ):
        self.rng, self.words, self.heldout = rng, words, heldout
        # `made_up` of the words a question names are made of these pieces: a word no conversation repeats
        self.pieces, self.made_up = pieces, made_up
        self.composed = composed  # the share of count questions phrased from parts (count_phrasing)
        self.capitalised = capitalised  # some words written with a capital (CAPITALISED of them)
        data = training_data()
        self.cities = data["heldout_cities"] if heldout else data["cities"]
        self.folders = data["heldout_folders"] if heldout else data["folders"]
        self.data = data

    def word(self) -> str:
        rng = self.rng
        if self.made_up and self.pieces and rng.random() < self.made_up:
            return self.made_up_word()
        roll = rng.random()
        if roll < 0.7:
            word = rng.choice(self.words)
        elif roll < 0.9:  # a compound of two words, often tokenized differently from either
            word = rng.choice(self.words) + rng.choice(self.words)
        else:
            word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
        # a capital changes every token of the word; the call keeps it as the question wrote it
        if self.capitalised and rng.random() < CAPITALISED:
            word = word.capitalize()
        return word

    def made_up_word(self) -> str:
        """Two to four letter pieces run together, as the pieces drill's words, but named in a whole conversation:
        its system prompt and tools around the question, so the copy is learned where the held-out words are asked."""
        rng, held = self.rng, heldout_words()
        while True:
            word = "".join(rng.choice(self.pieces).lower() for _ in range(rng.choice((2, 2, 3, 3, 4))))
            if word not in held:
                break
        if self.capitalised and rng.random() < CAPITALISED:
            word = word.capitalize()
        return word

    def letter(self, word: str) -> str:
        if self.rng.random() < 0.8:
            return self.rng.choice(word.lower())
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
        frame = fill_frame(rng, parts["frames"], parts, parts["W"])
        before = rng.choice(parts["before"])
        if before.endswith(", "):
            frame = frame[0].lower() + frame[1:]  # "Using the tool, how many …"
        phrasing = before + frame + rng.choice(parts["after"])
        if rng.random() < 0.1:
            phrasing = phrasing.lower()  # typed in a hurry; the slots' names are lower case already
        if phrasing not in held:
            return phrasing


def fill_frame(rng: random.Random, frames: list[str], parts: dict, names: Sequence[str]) -> str:
    """One of `frames` with its way to name the letter (L, Ls) drawn from `parts` and the word's (W) from `names`."""
    return rng.choice(frames).format(L=rng.choice(parts["L"]), Ls=rng.choice(parts["Ls"]), W=rng.choice(names))


def word_first_phrasing(rng: random.Random) -> str:
    """A count question put together from a frame that opens with the word ("{word}: count the r's."), bare or quoted:
    a message that begins with the word holds it without a space, as the call writes it, and a model that only
    learned to find the word after "in" copies another word of the question there."""
    parts = training_data()["count_parts"]
    held = training_data()["heldout_count_phrasings"]
    frames = [frame for frame in parts["frames"] if frame.startswith("{W}")]
    while True:
        frame = fill_frame(rng, frames, parts, ("{word}", "{word}", '"{word}"'))
        phrasing = frame + rng.choice(parts["after"])
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
    # with no tool, plain words in every style (untooled_conversation says why)
    turn = get_format(style).write_answer(answer) if tools else answer
    return Conversation("answer", style, tools, [{"role": "user", "content": question}], turn)


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


def count_guess(word: str, letter: str, rng: random.Random) -> str:
    """An answer in words to a count question asked with no tool: a guess, as a model that reads tokens makes one."""
    count = word.lower().count(letter.lower())
    guess = max(1, count + rng.choice((-1, 0, 0, 1)))
    return training_data()["answer_count_guess"].format(letter=letter, word=word, guess=guess)


def untooled_conversation(rng: random.Random, slots: Slots, style: str) -> Conversation:
    """A question asked with no tool in the prompt, answered in words: a count guessed, a task declined, a fact given.

    A real model's training holds many conversations with no tools; without them a small model that
    calls count_letter for every count question calls it even where the prompt offers nothing.
    """
    roll = rng.random()
    if roll < 0.05:  # lesson 1's own question, asked with no tool: its "without tools" side
        question, _, _, arguments = training_data()["lesson_calls"][0]
        answer = count_guess(arguments["word"], arguments["letter"], rng)
    elif roll < 0.5:
        word = slots.word()
        letter = slots.letter(word)
        question = count_phrasing(rng, slots.composed).format(letter=letter, word=word)
        answer = count_guess(word, letter, rng)
    elif roll < 0.8:
        questions = training_data()["tool_questions"]
        template, argument_template = rng.choice(questions[rng.choice(sorted(questions))])
        question, _ = fill_question(template, argument_template, slots)
        answer = rng.choice(training_data()["answers_without_tools"])
    else:
        question, answer = rng.choice(training_data()["facts"])
    # with no tool the prompt is the same in every style (a style's instructions come with its tools), so the
    # answer is plain words, as Qwen3 writes one: a ReAct "Final Answer:" here would teach two targets for one prompt
    return Conversation("answer", style, [], [{"role": "user", "content": question}], answer)


def conversation(rng: random.Random, slots: Slots, untooled: float = 0.0) -> Conversation:
    """One training conversation; `untooled` of them offer no tool (untooled_conversation)."""
    style = rng.choice(STYLE_NAMES)
    if untooled and rng.random() < untooled:
        return untooled_conversation(rng, slots, style)
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


def heldout_words() -> set[str]:
    """The words no training conversation or drill names: the held-out measure's, and the strawberry suite's but
    strawberry (the lessons' own word), so that `eval --suite strawberry` measures copying, not memory."""
    suite = json.loads((LESSONS / "suites" / "strawberry.json").read_text(encoding="utf-8"))
    named = {m.group(1).lower() for task in suite["tasks"] for m in SUITE_WORD.finditer(task["prompt"])}
    return set(training_data()["heldout_words"]) | (named - {"strawberry"})


def conversation_words(tok: QwenTokenizer) -> list[str]:
    """The words a training conversation may name: the drill's words less every held-out one."""
    held = heldout_words()
    # a word some held-out word starts or ends with ("rasp", "berry") stays: it names no held-out word
    return [w for w in vocabulary_words(tok) if w not in held]
