"""The command-line contract of DESIGN.md: one JSON object on stdout, exit 2 with one line on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.__main__ import main
from engine.settings import LESSONS

STRAWBERRY = str(LESSONS / "tools" / "strawberry.json")


@pytest.fixture
def question(tmp_path) -> str:
    path = tmp_path / "messages.json"
    path.write_text(json.dumps([{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]))
    return str(path)


def run_cli(capsys, *argv, stdin: str | None = None, monkeypatch=None):
    if stdin is not None:
        import io

        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_tokens_prints_241_for_the_strawberry_tools(capsys, question):
    code, out, _ = run_cli(capsys, "tokens", "--tools", STRAWBERRY, "--messages", question)
    data = json.loads(out)
    assert code == 0
    assert set(data) == {"style", "prompt_tokens", "tools_tokens", "spans"}
    assert (data["style"], data["prompt_tokens"], data["tools_tokens"]) == ("native", 264, 241)
    assert sum(s["tokens"] for s in data["spans"]) == 264
    assert [s["label"] for s in data["spans"]][:5] == [
        "template",
        "template",
        "tool count_letter",
        "tool tokenize",
        "template",
    ]


def test_tokens_react(capsys, question):
    code, out, _ = run_cli(capsys, "tokens", "--tools", STRAWBERRY, "--messages", question, "--style", "react")
    data = json.loads(out)
    assert (code, data["style"], data["tools_tokens"]) == (0, "react", 198)


@pytest.mark.parametrize(
    "text, policy, expected",
    [
        (
            '<tool_call>\n{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}\n</tool_call>',
            "per-block",
            {
                "calls": [{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}],
                "errors": [],
                "final": False,
            },
        ),
        ("It is 3.", "per-block", {"calls": [], "errors": [], "final": True}),
        (
            '<tool_call>\n{"name": "tokenize", "arguments": {"text": "a"}}\n</tool_call><tool_call>{"name": "x"',
            "per-block",
            {
                "calls": [{"name": "tokenize", "arguments": {"text": "a"}}],
                "errors": [
                    {
                        "block": 1,
                        "error": "error: the <tool_call> block is not closed with </tool_call>; was the reply cut off?",
                    }
                ],
                "final": False,
            },
        ),
        (
            '<tool_call>\n{"name": "tokenize", "arguments": {"text": "a"}}\n</tool_call><tool_call>{"name": "x"',
            "vllm",
            {
                "calls": [],
                "errors": [
                    {
                        "block": 1,
                        "error": "error: the <tool_call> block is not closed with </tool_call>; was the reply cut off?",
                    }
                ],
                "final": True,
            },
        ),
    ],
)
def test_parse(capsys, monkeypatch, text, policy, expected):
    code, out, _ = run_cli(
        capsys, "parse", "--tools", STRAWBERRY, "--policy", policy, stdin=text, monkeypatch=monkeypatch
    )
    assert code == 0 and json.loads(out) == expected


def test_parse_react(capsys, monkeypatch):
    text = 'Thought: x\nAction: tokenize\nAction Input: ```json\n{"text": "a"}\n```'
    code, out, _ = run_cli(
        capsys, "parse", "--tools", STRAWBERRY, "--style", "react", stdin=text, monkeypatch=monkeypatch
    )
    assert json.loads(out)["errors"] == [
        {"block": 0, "error": "error: write the Action Input as plain JSON, not inside a ``` code fence"}
    ]


def test_run(capsys):
    code, out, _ = run_cli(capsys, "run", "--scenario", "missing-brace")
    data = json.loads(out)
    assert code == 0 and set(data) == {"calls", "totals"}
    assert set(data["calls"][0]) == {"input_tokens", "output_tokens", "tool_calls", "errors"}
    assert data["totals"]["calls"] == 7 and data["totals"]["errors"] == 1
    assert data["calls"][0]["tool_calls"] == [{"name": "list_files", "arguments": {"dir": "."}}]


def test_tool(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    assert (
        run_cli(capsys, "tool", "read_file", "--args", '{"path": "notes.txt"}', "--workspace", str(tmp_path))[1]
        == '{"result": "hello"}\n'
    )
    code, out, _ = run_cli(capsys, "tool", "read_file", "--args", '{"path": "../x"}', "--workspace", str(tmp_path))
    assert code == 0 and json.loads(out) == {"error": "error: the path '../x' leaves the workspace"}
    code, out, _ = run_cli(
        capsys, "tool", "count_letter", "--args", '{"word": "strawberry", "letter": "r"}', "--workspace", str(tmp_path)
    )
    assert json.loads(out) == {"result": "3"}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["tokens", "--tools", "/nonexistent/tools.json"], "cannot read tools file"),
        (["tokens"], "--tools"),
        (["tokens", "--tools", STRAWBERRY, "--style", "xml"], "invalid choice"),
        (["run", "--scenario", "nope"], "unknown scenario 'nope'"),
        (["run", "--scenario", "mixed-turn", "--style", "react"], "no react version"),
        (["tool", "read_file", "--args", "{", "--workspace", "."], "--args is not valid JSON"),
        (["tool", "read_file", "--args", "[]", "--workspace", "."], "--args must be a JSON object"),
        (["tool", "read_file", "--args", "{}", "--workspace", "/nonexistent-folder"], "does not exist"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        code = main(argv)
        raise SystemExit(code)
    _, err = capsys.readouterr()
    assert exit_info.value.code == 2
    assert message in err and err.count("\n") == 1


def test_bad_tools_file_is_explained(capsys, tmp_path):
    bad = tmp_path / "tools.json"
    bad.write_text('[{"type": "function", "function": {"description": "no name"}}]')
    code, _, err = run_cli(capsys, "tokens", "--tools", str(bad))
    assert code == 2 and "tool 1: it has no name" in err
    bad.write_text("[{")
    code, _, err = run_cli(capsys, "tokens", "--tools", str(bad))
    assert code == 2 and "is not valid JSON" in err


def test_as_a_process(question):
    out = subprocess.run(
        [sys.executable, "-m", "engine", "tokens", "--tools", STRAWBERRY, "--messages", question],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert out.returncode == 0 and json.loads(out.stdout)["tools_tokens"] == 241


# -- inputs that once ended in a traceback: each is one line on stderr and exit 2 ------------------
DEEP = "[" * 3000 + "]" * 3000
HUGE = "9" * 5000


@pytest.mark.parametrize(
    "argv, message",
    [
        (["tool", "read_file", "--args", DEEP, "--workspace", "."], "--args nests lists and objects more than 64 deep"),
        (
            ["tool", "read_file", "--args", '{"path": ' + HUGE + "}", "--workspace", "."],
            "--args holds a number of 5,000 digits; at most 100 are read",
        ),
        (["tool", "read_file", "--args", '{"path": NaN}', "--workspace", "."], "--args holds NaN, which is not JSON"),
    ],
    ids=["args-3000-deep", "args-5000-digits", "args-nan"],
)
def test_hostile_arguments_exit_2_with_one_line(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert (code, out) == (2, "") and err.startswith(f"error: {message}") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "kind, body, message",
    [
        ("tools", DEEP, "nests lists and objects more than 64 deep"),
        ("tools", "[" + HUGE + "]", "holds a number of 5,000 digits"),
        ("messages", DEEP, "nests lists and objects more than 64 deep"),
        (
            "messages",
            '[{"role": "user", "content": "' + "x" + '", "n": ' + HUGE + "}]",
            "holds a number of 5,000 digits",
        ),
        ("messages", '[{"role": "user", "content": Infinity}]', "holds Infinity, which is not JSON"),
    ],
)
def test_hostile_files_exit_2_with_one_line(capsys, tmp_path, kind, body, message):
    path = tmp_path / f"{kind}.json"
    path.write_text(body)
    argv = (
        ["tokens", "--tools", str(path)]
        if kind == "tools"
        else ["tokens", "--tools", STRAWBERRY, "--messages", str(path)]
    )
    code, out, err = run_cli(capsys, *argv)
    assert (code, out) == (2, "") and message in err and err.count("\n") == 1, err


def test_tokens_without_messages_counts_the_tools_beside_an_empty_user_message(capsys, question):
    code, out, err = run_cli(capsys, "tokens", "--tools", STRAWBERRY)
    assert code == 0, err
    alone = json.loads(out)
    _, out, _ = run_cli(capsys, "tokens", "--tools", STRAWBERRY, "--messages", question)
    assert alone["tools_tokens"] == json.loads(out)["tools_tokens"] == 241
    assert alone["spans"][-2] == {"label": "user message 0", "tokens": 5}


def test_a_long_react_turn_and_a_long_unique_array_are_read_in_one_pass(capsys, monkeypatch):
    """Action: a, 40,000 spaces, b: answered (it once took 8 s); 4,000 distinct objects pass uniqueItems, one repeat fails."""
    code, out, _ = run_cli(
        capsys,
        "parse",
        "--tools",
        STRAWBERRY,
        "--style",
        "react",
        stdin="Action: a" + " " * 40000 + "b",
        monkeypatch=monkeypatch,
    )
    assert code == 0 and json.loads(out)["errors"][0]["error"].startswith("error: an Action: line must be followed")
    from engine.core.parse import ArgumentValidator

    schema = {"type": "array", "uniqueItems": True}
    items = [{"k": i, "v": [i, {"x": i}]} for i in range(4000)]
    assert ArgumentValidator(schema).is_valid(items)
    assert not ArgumentValidator(schema).is_valid([*items, {"v": [7, {"x": 7}], "k": 7.0}])
    assert ArgumentValidator(schema).is_valid([1, True, "1", None, 0, False])
