"""engine/harness/eval.py and `python -m engine eval`: the counting rules, the suites, the grading, the contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import COUNT_CALL

from engine.__main__ import main
from engine.core.call_formats import parse_turn
from engine.core.out_paths import COMPILE_CACHES
from engine.core.parse import MAX_CALLS
from engine.core.tooldefs import load_tool_set
from engine.errors import BadInput
from engine.harness.eval import (
    KINDS,
    EvalSettings,
    Tally,
    Task,
    csv_text,
    grade,
    judge_turn,
    load_suite,
    record_run,
    run_suite,
    suite_names,
)
from engine.harness.loop import ScriptedModel, Turn

STRAWBERRY = load_tool_set("strawberry")
ROOT = Path(__file__).resolve().parent.parent


def block(body: str) -> str:
    return f"<tool_call>\n{body}\n</tool_call>"


# -- the counting rules: a turn and the kind of each of its blocks ------------------------------------
TURNS = [
    # (turn text, finish, kinds: None for a valid call)
    (COUNT_CALL, "stop", [None]),
    ("The capital of France is Paris.", "stop", []),
    (block('{"name": "count_letter", "arguments": {"word": "straw\nberry", "letter": "r"}}'), "stop", ["bad_json"]),
    (block('{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}'), "stop", ["bad_json"]),
    (block(""), "stop", ["bad_json"]),
    (block('{"name": "git_commit", "arguments": {}}'), "stop", ["unknown_tool"]),
    (block('{"name": "count_letter", "arguments": {"word": "strawberry"}}'), "stop", ["bad_arguments"]),
    (
        block('{"name": "count_letter", "arguments": {"word": "a", "letter": "r", "case": "any"}}'),
        "stop",
        ["bad_arguments"],
    ),
    (block('{"name": "count_letter", "arguments": {"word": 7, "letter": "r"}}'), "stop", ["bad_arguments"]),
    (block('{"name": "count_letter", "arguments": "word=strawberry"}'), "stop", ["bad_arguments"]),
    (block('{"tool": "count_letter", "args": {}}'), "stop", ["bad_shape"]),
    ('<tool_call>\n{"name": "count_letter", "arguments": {"word": "strawbe', "length", ["cut_off"]),
    ('<tool_call>\n{"name": "count_letter", "arguments": {"word": "strawbe', "stop", ["not_closed"]),
    (COUNT_CALL + "\n" + block('{"name": "nope", "arguments": {}}'), "stop", [None, "unknown_tool"]),
    (COUNT_CALL + '\n<tool_call>\n{"name": "count', "length", [None, "cut_off"]),
    ("\n".join([COUNT_CALL] * (MAX_CALLS + 1)), "stop", [None] * MAX_CALLS + ["too_many_calls"]),
]


@pytest.mark.parametrize(("text", "finish", "kinds"), TURNS)
def test_each_block_gets_one_kind(text, finish, kinds):
    verdict = judge_turn(parse_turn(text, STRAWBERRY), finish)
    assert [b.kind for b in verdict.blocks] == kinds
    assert all((b.kind is None) == (b.error is None) for b in verdict.blocks)


@pytest.mark.parametrize(
    ("text", "finish", "kind"),
    [
        ("Action: count_letter\nAction Input: ```json\n{}\n```", "stop", "bad_json"),
        ("I think the answer is three.", "stop", "bad_format"),
        ('Action: count_letter\nAction Input: {"word": "straw', "length", "cut_off"),
        ('Action: git_commit\nAction Input: {"message": "fix"}', "stop", "unknown_tool"),
    ],
)
def test_react_turns_are_counted_too(text, finish, kind):
    assert [b.kind for b in judge_turn(parse_turn(text, STRAWBERRY, "react"), finish).blocks] == [kind]


def record_of(texts_and_finishes, task: Task | None = None, answer=None):
    """A RunRecord for a scripted run of the given turns (no harness: each turn judged as the harness would)."""
    from engine.harness.eval import RunRecord

    turns = [judge_turn(parse_turn(t, STRAWBERRY), f) for t, f in texts_and_finishes]
    return RunRecord("t", 0, turns, False, answer, "", 10, 5)


def test_a_tally_adds_up_valid_and_unusable_to_the_blocks():
    tally = Tally()
    for text, finish, _ in TURNS:
        tally.add(record_of([(text, finish)]))
    data = tally.as_json()
    assert data["blocks"] == sum(len(k) for *_, k in TURNS)
    assert data["valid"] + sum(data["unusable"].values()) == data["blocks"]
    assert list(data["unusable"])[: len(KINDS)] == list(KINDS)  # the four kinds always, first
    assert data["runs_with_call"] == sum(bool(k) for *_, k in TURNS)
    assert data["tokens"] == {"in": 10 * len(TURNS), "out": 5 * len(TURNS)}


# -- grading ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expect", "called", "any_block", "answer", "files", "right"),
    [
        ({"tool": "count_letter", "answer": ["3", "three"]}, ["count_letter"], True, "It has 3 r's.", {}, True),
        ({"tool": "count_letter", "answer": ["3", "three"]}, [], False, "It has 3 r's.", {}, False),  # a guess
        ({"tool": "count_letter", "answer": ["3"]}, ["count_letter"], True, "It has 13.", {}, False),
        ({"tool": None, "answer": ["Paris"]}, [], False, "paris.", {}, True),
        ({"tool": None, "answer": ["Paris"]}, [], True, "Paris.", {}, False),  # a broken call is still a call
        ({"tool": ["edit_file", "write_file"]}, ["write_file"], True, None, {}, True),
        ({"file": "calc.py", "contains": "a + b"}, ["write_file"], True, "done", {"calc.py": "return a + b"}, True),
        ({"file": "calc.py", "contains": "a + b"}, [], False, "done", {"calc.py": "return a - b"}, False),
        ({"file": "hello.txt", "contains": ""}, [], False, "done", {}, False),  # the file was never written
    ],
)
def test_grade(expect, called, any_block, answer, files, right):
    assert grade(Task("t", [], expect, ""), called, any_block, answer, files) is right


# -- the suites -------------------------------------------------------------------------------------------
def test_the_three_suites_load_and_say_what_right_is():
    assert {"strawberry", "harness", "twelve-tools"} <= set(suite_names())
    for name in suite_names():
        suite = load_suite(name)
        assert suite.tasks and all(t.right and t.expect for t in suite.tasks), name
        assert len({t.id for t in suite.tasks}) == len(suite.tasks), name
        names = {t["function"]["name"] for t in suite.tools}
        for task in suite.tasks:
            tool = task.expect.get("tool")
            assert all(n in names for n in ([tool] if isinstance(tool, str) else tool or [])), task.id
    assert len(load_suite("twelve-tools").tools) == 12
    assert len(load_suite("harness").tools) == 5 and load_suite("harness").max_turns == 8


def test_strawberry_has_count_questions_with_true_counts_and_questions_no_tool_helps():
    suite = load_suite("strawberry")
    counting = [t for t in suite.tasks if t.expect.get("tool") == "count_letter"]
    plain = [t for t in suite.tasks if t.expect.get("tool", "") is None]
    assert len(counting) >= 8 and len(plain) >= 3
    for task in counting:
        words = task.messages[-1]["content"].rstrip("?").split()
        letter, word = words[words.index("letter") + 1], words[-1]
        assert task.expect["answer"][0] == str(word.count(letter)), task.id


def test_twelve_tools_tasks_end_where_the_model_speaks_next():
    for task in load_suite("twelve-tools").tasks:
        assert task.messages[-1]["role"] in ("user", "tool"), task.id


def test_unknown_suite_names_the_suites():
    with pytest.raises(BadInput, match="the suites are harness, strawberry, twelve-tools"):
        load_suite("nope")


def test_an_eval_past_the_cap_is_refused_with_what_to_lower():
    with pytest.raises(BadInput, match=r"over the cap .* lower --seeds, --max-new-tokens or --limit"):
        EvalSettings(seeds=1000).check(load_suite("harness"))
    EvalSettings(seeds=3).check(load_suite("harness"))


@pytest.mark.parametrize(
    "settings, message",
    [
        (EvalSettings(max_new_tokens=0), "--max-new-tokens must be at least 1, not 0"),
        (EvalSettings(max_new_tokens=-1), "--max-new-tokens must be at least 1, not -1"),
        (EvalSettings(seeds=0), "--seeds must be at least 1, not 0"),
        (EvalSettings(limit=0), "--limit must be at least 1, not 0"),
        (EvalSettings(limit=-2), "--limit must be at least 1, not -2"),
    ],
)
def test_a_zero_or_negative_setting_is_refused_never_read_as_not_given(settings, message):
    with pytest.raises(BadInput, match=message):
        settings.check(load_suite("strawberry"))


def test_only_none_means_the_suites_own_tokens_and_tasks():
    suite = load_suite("strawberry")
    assert EvalSettings().tokens(suite) == suite.max_new_tokens and EvalSettings(max_new_tokens=8).tokens(suite) == 8
    assert EvalSettings().tasks(suite) == suite.tasks and len(EvalSettings(limit=1).tasks(suite)) == 1


# -- running a suite with a scripted model (no torch) ------------------------------------------------------
def test_run_suite_counts_a_scripted_model():
    suite = load_suite("strawberry")
    answers = {
        "count-r-in-strawberry": [COUNT_CALL, "There are 3 r's in strawberry."],
        "count-r-in-raspberry": [
            block('{"name": "count_letter", "arguments": {"word": "rasp\nberry", "letter": "r"}}'),
            "I could not count.",
        ],
    }
    order = iter([*answers["count-r-in-strawberry"], *answers["count-r-in-raspberry"]] * 2)

    def make_model(settings):
        return ScriptedModel([Turn(next(order)), Turn(next(order))])

    seen = []
    result = run_suite(
        suite,
        EvalSettings(seeds=2, limit=2),
        make_model,
        {"name": "scripted"},
        on_run=lambda r: seen.append(len(r.records)),
    )
    data = result.as_json()
    assert seen == [1, 2, 3, 4]
    assert (data["runs"], data["blocks"], data["valid"], data["runs_with_call"], data["right"]) == (4, 4, 2, 4, 2)
    assert data["unusable"] == {"bad_json": 2, "unknown_tool": 0, "bad_arguments": 0, "cut_off": 0}
    assert [t["id"] for t in data["tasks"]] == ["count-r-in-strawberry", "count-r-in-raspberry"]
    assert data["tasks"][0]["right"] == 2 and data["tasks"][1]["unusable"]["bad_json"] == 2
    assert data["errors"] == {"error: a string in the call contains a raw newline; write it as \\n": 2}
    lines = csv_text([result]).splitlines()
    assert lines[0].startswith("condition,task,runs,turns,blocks,valid,bad_json,unknown_tool,bad_arguments,cut_off")
    assert lines[1].startswith("free,all,4,8,4,2,2,0,0,0")


def test_a_stopped_eval_keeps_what_ran():
    calls = []

    def make_model(settings):
        calls.append(settings.seed)
        return ScriptedModel([Turn("Paris.")])

    result = run_suite(
        load_suite("strawberry"), EvalSettings(seeds=3), make_model, {}, should_stop=lambda: len(calls) >= 5
    )
    assert result.stopped and len(result.records) == 5 and result.planned == 3 * len(load_suite("strawberry").tasks)


def test_the_harness_suite_runs_its_tools_in_a_workspace_and_grades_the_file():
    suite = load_suite("harness")
    fix = block(
        json.dumps(
            {"name": "write_file", "arguments": {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}}
        )
    )
    turns = iter([fix, "Fixed."])
    result = run_suite(
        suite, EvalSettings(seeds=1, limit=1), lambda s: ScriptedModel([Turn(next(turns)), Turn(next(turns))]), {}
    )
    record = result.records[0]
    assert record.right and [b.kind for t in record.turns for b in t.blocks] == [None]


def test_record_run_needs_no_model():
    from engine.harness.loop import run_episode

    suite = load_suite("strawberry")
    run = run_episode(ScriptedModel([Turn(COUNT_CALL), Turn("3")]), suite.tasks[0].messages, suite.tools, max_turns=3)
    assert record_run(suite.tasks[0], 0, run, {}).right


# -- the command line (the tiny random-weights model) --------------------------------------------------------
def run_eval(capsys, *argv):
    code = main(["eval", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_unknown_suite_exits_2_with_one_line(capsys):
    code, out, err = run_eval(capsys, "--model", "tiny", "--suite", "nope")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "unknown suite 'nope'" in err


def test_cli_past_the_cap_exits_2_before_loading(capsys):
    code, _, err = run_eval(capsys, "--model", "tiny", "--suite", "harness", "--seeds", "500")
    assert code == 2 and err.count("\n") == 1 and "over the cap" in err


@pytest.mark.parametrize("tool_choice", ["required", "auto"])
def test_cli_eval_with_the_tiny_model(capsys, tiny_engine, tool_choice):
    code, out, _ = run_eval(
        capsys,
        "--model",
        "tiny",
        "--suite",
        "strawberry",
        "--seeds",
        "2",
        "--limit",
        "2",
        "--max-new-tokens",
        "24",
        "--tool-choice",
        tool_choice,
    )
    data = json.loads(out)
    assert code == 0
    assert {"suite", "runs", "blocks", "valid", "unusable", "runs_with_call", "tokens", "tasks"} <= set(data)
    assert data["suite"] == "strawberry" and data["runs"] == 4 and len(data["tasks"]) == 2
    assert set(KINDS) <= set(data["unusable"]) and data["tokens"]["in"] > 0 and data["tokens"]["out"] > 0
    assert data["valid"] + sum(data["unusable"].values()) == data["blocks"]
    for task in data["tasks"]:
        assert task["valid"] + sum(task["unusable"].values()) == task["blocks"]
    if tool_choice == "required":
        # the grammar forces a call on every run, and rules out everything but the token limit
        assert data["runs_with_call"] == data["runs"]
        assert {k: n for k, n in data["unusable"].items() if n}.keys() <= {"cut_off"}


def test_cli_constrained_auto_leaves_only_cut_offs(capsys, tiny_engine):
    code, out, _ = run_eval(
        capsys,
        "--model",
        "tiny",
        "--suite",
        "twelve-tools",
        "--seeds",
        "1",
        "--limit",
        "3",
        "--max-new-tokens",
        "16",
        "--constrained",
    )
    data = json.loads(out)
    assert code == 0 and data["condition"] == "grammar"
    assert {k for k, n in data["unusable"].items() if n} <= {"cut_off"}


@pytest.mark.slow
def test_eval_leaves_tmpdir_and_the_working_folder_as_it_found_them(tmp_path):
    """A process of its own, so that torch._dynamo is imported afresh (it makes $TMPDIR/torchinductor_<user> on
    import): about 15 s, the command line's imports and the tiny model's build."""
    temp, work = tmp_path / "tmp", tmp_path / "work"
    temp.mkdir()
    work.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(ROOT)}
    for name in COMPILE_CACHES:
        env.pop(name, None)
    argv = ["--model", "tiny", "--suite", "harness", "--seeds", "1", "--limit", "1", "--max-new-tokens", "8"]
    done = subprocess.run(
        [sys.executable, "-m", "engine", "eval", *argv], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["runs"] == 1
    assert (sorted(temp.iterdir()), sorted(work.iterdir())) == ([], [])
