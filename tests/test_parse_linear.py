"""Every reading of every call format runs in time linear in the turn, and a call over the bound is one error.

For each format in the registry and each of its strict and server readings, the adversarial shapes of
tests/linear_shapes.py (runs of the format's own markers, of brackets and separators, JSON nested
deep, one call of very many arguments) are read at 25,000, 100,000 and 400,000 characters. A
reading fails when 400,000 characters take 4 s or more, or take more than MAX_RATIO times what
25,000 take (linear is 16, quadratic 256). Times are CPU seconds of this process, so a busy machine's
other work does not count, and a shape that looks slow is timed again, up to three times each,
its fastest kept (as timeit advises). The span is sixteenfold because a busy machine slows a large text
more than a small one, through the caches its other work shares: in a full suite native's call of very
many arguments took 0.005, 0.016 and 0.051 s at 50,000, 100,000 and 200,000 characters, fastest of three
(idle: 0.0031, 0.0062, 0.0133), a ratio of 10 over a fourfold span where the check allowed 8. Over a
sixteenfold span linear stays near 16 to 60 however busy, and quadratic is at 256 or more: a test that
fails once in twenty on a busy 2-core machine is worse than none.
"""

from __future__ import annotations

import gc
import io
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from linear_shapes import NAME, many_arguments, shapes

from engine.__main__ import main
from engine.core.call_formats import FORMATS, get_format, gpt_oss, parse_turn
from engine.core.call_formats.calls import MAX_ARGUMENTS, too_many_arguments
from engine.core.call_formats.json_starts import FAILED, JsonStarts
from engine.core.parse import SERVER, STRICT
from engine.settings import LESSONS

TOOLS_FILE = LESSONS / "tools" / "strawberry.json"
TOOLS = json.loads(TOOLS_FILE.read_text())
SIZES = (25_000, 100_000, 400_000)
LIMIT = 2.0  # CPU seconds a reading of 200,000 characters must stay under
GROWTH_LIMIT = 4.0  # CPU seconds the reading of 400,000 characters must stay under
MAX_RATIO = 100  # time(400k) / time(25k): linear is 16 (up to about 60 on a busy machine), quadratic 256
FLOOR = 0.04  # CPU seconds at 400,000 characters under which a reading is too quick to time its growth
SMALLEST = FLOOR / 64  # a reading of 25,000 characters quicker than this is timed as this (a clock's grain)
READINGS = [(f.name, p) for f in FORMATS.values() for p in f.policies if p in (STRICT, SERVER)]


def cpu_seconds(read: Callable[[str], object], text: str) -> float:
    """The CPU time of one reading of `text`, with the garbage collector paused as timeit pauses it: a full
    collection scans every object of the process, so the reading that happens to set one off is charged for the
    worker's whole heap, not for its text."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        started = time.process_time()
        read(text)
        return time.process_time() - started
    finally:
        if collecting:
            gc.enable()


def growth_problem(texts: dict[int, str], read: Callable[[str], object]) -> str | None:
    """Why reading these texts (size -> text) is not linear, or None: each size timed once, and again (up to
    three times, the fastest kept) while the figures look wrong."""
    times: dict[int, list[float]] = {size: [] for size in SIZES}
    times[SIZES[-1]].append(cpu_seconds(read, texts[SIZES[-1]]))
    if times[SIZES[-1]][0] < FLOOR:
        return None
    for attempt in range(3):
        for size in SIZES:
            if len(times[size]) <= attempt:
                times[size].append(cpu_seconds(read, texts[size]))
        small, large = min(times[SIZES[0]]), min(times[SIZES[-1]])
        if large < GROWTH_LIMIT and large <= MAX_RATIO * max(small, SMALLEST):
            return None
    shown = ", ".join(f"{size:,}: {min(t):.3f} s" for size, t in times.items())
    return f"{shown} (ratio {large / max(small, 1e-9):.1f})"


@pytest.mark.slow
@pytest.mark.parametrize(("name", "policy"), READINGS)
def test_every_shape_reads_in_linear_time(name, policy):
    fmt = get_format(name)
    by_size = {size: shapes(fmt, size) for size in SIZES}
    slow = {}
    for label in by_size[SIZES[-1]]:
        texts = {size: by_size[size][label] for size in SIZES}
        problem = growth_problem(texts, lambda text: parse_turn(text, TOOLS, name, policy))
        if problem:
            slow[label] = problem
    assert slow == {}, f"{name} ({policy}) reads these shapes worse than linearly or too slowly: {slow}"


def test_the_growth_check_can_fail():
    # a reading that copies the rest of the text every 10 characters, as Qwen3-Coder's once did
    def quadratic(text: str) -> int:
        return sum(len(text[i:]) for i in range(0, len(text), 10))

    texts = {size: "x" * size for size in SIZES}
    assert growth_problem(texts, quadratic) is not None
    assert growth_problem(texts, len) is None


def test_every_format_gets_shapes_from_its_own_markers():
    # a format's opener and the tag that ends its call are among its shapes, whatever they are
    for fmt in FORMATS.values():
        labels = shapes(fmt, 1_000)
        assert f"run of {fmt.opener.text or fmt.name_prefix!r}" in labels, fmt.name
        if fmt.tag_grammar:
            assert f"run of {fmt.call_tag(NAME)[1]!r}" in labels, fmt.name
        assert "one call with very many arguments" in labels


# -- a call over the bound: one error that says how many arguments it holds ----------------------------------
def over_bound_rows() -> list:
    """(format, policy, turn, the error) for a call of MAX_ARGUMENTS + 1 arguments in every reading, and a call
    of 200,000 Qwen3-Coder parameters."""
    cases = [(name, policy, MAX_ARGUMENTS + 1) for name, policy in READINGS]
    cases += [("qwen3-coder", policy, 200_000) for policy in get_format("qwen3-coder").policies]
    return [
        pytest.param(name, policy, call_of(name, count), too_many_arguments(count), id=f"{name}-{policy}-{count}")
        for name, policy, count in cases
    ]


def call_of(name: str, count: int) -> str:
    """A call of `count` arguments, written as the format writes it."""
    return get_format(name).write_call(NAME, {f"p{i}": "v" for i in range(count)})


@pytest.mark.parametrize(("name", "policy", "turn", "error"), over_bound_rows())
def test_a_call_over_the_bound_is_one_error_that_teaches(name, policy, turn, error):
    started = time.process_time()
    result = parse_turn(turn, TOOLS, name, policy)
    assert time.process_time() - started < LIMIT
    assert result.calls == [] and [e.error for e in result.errors] == [error]
    assert "\n" not in error and len(error) <= 300
    [block] = result.blocks
    assert [(c.name, c.passed) for c in block.checks if c.passed is False] == [("arguments", False)]


def test_the_bound_message_says_the_count_the_bound_and_what_to_do():
    assert too_many_arguments(200_000) == (
        "error: this call has 200,000 arguments; at most 100 are read in one call, "
        "as a tool lists at most 100 parameters: pass only the ones its schema lists"
    )


def test_a_call_at_the_bound_is_read():
    # a tool that takes any argument: a hundred of them are a call, a hundred and one are refused
    free = [
        {
            "type": "function",
            "function": {"name": "free", "parameters": {"type": "object", "additionalProperties": True}},
        }
    ]
    for name, policy in READINGS:
        fmt = get_format(name)
        result = parse_turn(fmt.write_call("free", {f"p{i}": "v" for i in range(MAX_ARGUMENTS)}), free, name, policy)
        assert [len(c.arguments) for c in result.calls] == [MAX_ARGUMENTS], (name, policy, result.errors)


@pytest.mark.parametrize(
    ("label", "turn", "error"),
    [
        (
            "more messages than harmony is handed",
            "<|channel|>analysis<|message|>Thinking.<|end|><|start|>assistant" * (gpt_oss.MAX_MESSAGES + 1),
            gpt_oss.TOO_MANY_MESSAGES,
        ),
        (
            "a header of 200,000 characters",
            "x" * 200_000 + "<|message|>{}<|call|>",
            gpt_oss.TOO_LONG_HEADERS,
        ),
    ],
)
def test_a_harmony_reply_over_a_bound_is_one_error(label, turn, error):
    result = parse_turn(turn, TOOLS, "gpt-oss", SERVER)
    assert result.calls == [] and [e.error for e in result.errors] == [error]


# -- the linear readings keep the reference's verdicts -----------------------------------------------------------
JSON_PIECES = ['[', ']', '{', '}', '"', ',', ':', ' ', '\n', '1', '0', '-', '.', 'e', '+', 'true', 'NaN', '-Infinity',
               '\\', '\\u00e9', '\\x', '\x01', '"k"', '{"a":', '[1,', 'tru', '01', '1.5e3', '1e', '[]', '{}']  # fmt: skip


def test_json_starts_agrees_with_python_s_decoder_at_every_bracket():
    decoder, rng = json.JSONDecoder(), random.Random(46)
    for _ in range(3_000):
        text = "".join(rng.choice(JSON_PIECES) for _ in range(rng.randint(1, 30)))
        starts = JsonStarts(text)
        brackets = [i for i, c in enumerate(text) if c in "[{"]
        rng.shuffle(brackets)  # asked in any order
        for at in brackets:
            try:
                expected = decoder.raw_decode(text, at)[1]
            except ValueError:
                expected = FAILED
            assert starts.end_of(at) == expected, (text, at)


@pytest.mark.parametrize(
    ("text", "at", "end"),
    [
        ("[" * 128 + "]" * 128, 0, 256),  # as deep as a value may nest
        ("[" * 129 + "]" * 129, 0, FAILED),  # one deeper: no JSON here, though Python's decoder would read it
        ("[" * 129 + "]" * 129, 1, 257),  # and the value inside it is as deep as may be
        ("[" + "9" * 4300 + "]", 0, 4302),  # the longest integer int() reads
        ("[" + "9" * 4301 + "]", 0, FAILED),  # one digit more: Python's decoder raises ValueError
        ("[" * 200_000, 100_000, FAILED),
    ],
    ids=["at the depth", "past the depth", "inside, at the depth", "4,300 digits", "4,301 digits", "a run of ["],
)
def test_json_starts_bounds(text, at, end):
    assert JsonStarts(text).end_of(at) == end


def test_llama_s_server_reading_leaves_json_deeper_than_the_bound_as_text():
    deep = "[" * 200 + "]" * 200
    turn = '{"name": "count_letter", "parameters": {"word": ' + deep + ', "letter": "r"}}'
    assert parse_turn(turn, TOOLS, "llama3.1", SERVER).calls == []
    # as deep as the bound allows, the same call is read (and its arguments checked)
    shallow = turn.replace(deep, "[" * 100 + "]" * 100)
    assert parse_turn(shallow, TOOLS, "llama3.1", SERVER).errors[0].error.startswith("error: argument 'word'")


def harmony_turns(rng: random.Random, count: int) -> list[str]:
    """Harmony replies of a few messages each, some broken: long bodies, text where <|start|> belongs, headers
    never closed."""
    headers = ["<|channel|>final", " to=functions.count_letter<|channel|>commentary <|constrain|>json",
               "<|channel|>commentary to=functions.tokenize <|constrain|>json", "", "<|channel|>", "Let me count.", "x" * 300]  # fmt: skip
    bodies = ['{"word": "strawberry", "letter": "r"}', '{"text": "' + "r" * 100 + '"}', "Three.", "", "y" * 200,
              "a<|message|>b", "a<|channel|>b" * 20, '{"word": 5}']  # fmt: skip
    turns = []
    for _ in range(count):
        parts = []
        for index in range(rng.randint(1, 4)):
            if index:
                parts.append(rng.choice(["<|start|>assistant", "<|start|>assistant", "", "junk", "\n"]))
            parts += [rng.choice(headers), rng.choice(["<|message|>", "<|message|>", ""]), rng.choice(bodies)]
            parts.append(rng.choice(["<|call|>", "<|end|>", "<|return|>", ""]))
        turns.append("".join(parts))
    return turns


def test_gpt_oss_s_hand_over_keeps_harmony_s_verdict(monkeypatch):
    def summary(result):
        return [(c.name, c.arguments) for c in result.calls], result.errors, result.final, result.answer

    turns = harmony_turns(random.Random(46), 300)
    handed = [summary(parse_turn(t, TOOLS, "gpt-oss", SERVER)) for t in turns]
    # the whole reply handed to harmony, as the reading was before hand_over
    monkeypatch.setattr(gpt_oss, "hand_over", lambda text: gpt_oss.HandOver(text, {}))
    whole = [summary(parse_turn(t, TOOLS, "gpt-oss", SERVER)) for t in turns]
    assert handed == whole


# -- the command line ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", [f.family for f in FORMATS.values() if f.maker_format])
def test_the_command_line_parses_200k_shapes_quickly(capsys, monkeypatch, family):
    fmt = get_format(family)
    policy = SERVER if SERVER in fmt.policies else STRICT
    for turn in (many_arguments(fmt, 200_000), "[" * 200_000, ";" * 200_000):
        monkeypatch.setattr(sys, "stdin", io.StringIO(turn))
        started = time.process_time()
        code = main(["parse", "--tools", str(TOOLS_FILE), "--family", family, "--policy", policy])
        assert time.process_time() - started < LIMIT
        out = json.loads(capsys.readouterr().out)
        assert code == 0 and set(out) == {"calls", "errors", "final"}


def test_the_command_line_reads_a_200k_shape_from_a_pipe():
    # as a classroom script runs it: the turn on stdin, one JSON object on stdout (a process of its own)
    turn = many_arguments(get_format("qwen3-coder"), 200_000)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "engine", "parse", "--tools", str(TOOLS_FILE), "--family", "qwen3-coder", "--policy", SERVER],
        input=turn, capture_output=True, text=True, timeout=120, cwd=str(LESSONS.parent), check=True,
    )  # fmt: skip
    assert time.perf_counter() - started < 60
    assert json.loads(done.stdout) == {
        "calls": [],
        "errors": [{"block": 0, "error": too_many_arguments(turn.count("<parameter="))}],
        "final": False,
    }
