"""The command-line contract of DESIGN.md: one JSON object on stdout, exit 2 with one line on bad input."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.__main__ import main
from engine.core.call_formats import family_names, format_names, get_format
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


COUNT = '{"word": "strawberry", "letter": "r"}'
COUNTED = [{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}]


@pytest.mark.parametrize(
    ("family", "policy", "text", "calls", "final"),
    [
        # a call after leading text, and <|python_tag|> after text: Llama 3.1 under server only
        (
            "llama3.1",
            "server",
            'Let me count that. {"name": "count_letter", "parameters": ' + COUNT + "}",
            COUNTED,
            False,
        ),
        ("llama3.1", "per-block", 'Let me count that. {"name": "count_letter", "parameters": ' + COUNT + "}", [], True),
        (
            "llama3.1",
            "server",
            'Sure. <|python_tag|>{"name": "count_letter", "parameters": ' + COUNT + "}",
            COUNTED,
            False,
        ),
        # a call list followed by text, and the newer [TOOL_CALLS]name{args} layout: Mistral under server
        (
            "mistral",
            "server",
            '[TOOL_CALLS] [{"name": "count_letter", "arguments": ' + COUNT + "}] Counting now.",
            COUNTED,
            False,
        ),
        ("mistral", "server", "[TOOL_CALLS]count_letter" + COUNT, COUNTED, False),
        # strictly, the list's call runs and the text after it is reported on its own
        (
            "mistral",
            "per-block",
            '[TOOL_CALLS] [{"name": "count_letter", "arguments": ' + COUNT + "}] Counting now.",
            COUNTED,
            False,
        ),
        # DeepSeek-V3 reads V3's layout, DeepSeek-V3.1 V3.1's
        (
            "deepseek-v3",
            "per-block",
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>count_letter\n```json\n"
            + COUNT
            + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            COUNTED,
            False,
        ),
        (
            "deepseek-v3.1",
            "per-block",
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>count_letter<｜tool▁sep｜>"
            + COUNT
            + "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            COUNTED,
            False,
        ),
        ("deepseek-v3.1", "server", "Let me look.<｜tool▁calls▁begin｜>count_letter", [], True),
        # a final block with no </tool_call>: vLLM's regex reads it, per-block reports it
        ("qwen3", "vllm", '<tool_call>\n{"name": "count_letter", "arguments": ' + COUNT + "}\n", COUNTED, False),
        ("qwen3", "server", '<tool_call>\n{"name": "count_letter", "arguments": ' + COUNT + "}\n", COUNTED, False),
        ("qwen3", "per-block", '<tool_call>\n{"name": "count_letter", "arguments": ' + COUNT + "}\n", [], False),
    ],
)
def test_parse_family_under_each_policy(capsys, monkeypatch, family, policy, text, calls, final):
    code, out, _ = run_cli(
        capsys,
        "parse",
        "--family",
        family,
        "--policy",
        policy,
        "--tools",
        STRAWBERRY,
        stdin=text,
        monkeypatch=monkeypatch,
    )
    data = json.loads(out)
    assert code == 0 and data["calls"] == calls and data["final"] is final


def test_parse_react(capsys, monkeypatch):
    text = 'Thought: x\nAction: tokenize\nAction Input: ```json\n{"text": "a"}\n```'
    code, out, _ = run_cli(
        capsys, "parse", "--tools", STRAWBERRY, "--style", "react", stdin=text, monkeypatch=monkeypatch
    )
    assert json.loads(out)["errors"] == [
        {"block": 0, "error": "error: write the Action Input as plain JSON, not inside a ``` code fence"}
    ]


# -- --format NAME: the call format by its registry name, printing what the flag it stands for prints ---------------
# (--format argv, the --style / --family argv it stands for); every family in the registry has its row
FORMAT_ROWS = [
    *[(["--format", family], ["--family", family]) for family in family_names()],
    (["--format", "native"], ["--style", "native"]),
    (["--format", "react"], ["--style", "react"]),
    # flags that agree with --format are taken as they are
    (["--format", "react", "--family", "qwen3"], ["--family", "qwen3", "--style", "react"]),
    (["--format", "qwen3", "--style", "native"], ["--family", "qwen3"]),
]


def the_call_in(argv: list[str]) -> str:
    """A call to count_letter written in the format a row's argv names (what `parse` reads on stdin)."""
    return get_format(argv[argv.index("--format") + 1]).write_call(
        "count_letter", {"word": "strawberry", "letter": "r"}
    )


@pytest.mark.parametrize(("format_argv", "flag_argv"), FORMAT_ROWS, ids=lambda argv: " ".join(argv))
def test_tokens_with_format_prints_byte_for_byte_what_the_flag_prints(capsys, question, format_argv, flag_argv):
    by_format = run_cli(capsys, "tokens", "--tools", STRAWBERRY, "--messages", question, *format_argv)
    by_flag = run_cli(capsys, "tokens", "--tools", STRAWBERRY, "--messages", question, *flag_argv)
    # exit and stdout byte for byte (stderr may carry a hub lookup's retries)
    assert by_format[0] == 0 and by_format[1] and by_format[:2] == by_flag[:2]


@pytest.mark.parametrize(("format_argv", "flag_argv"), FORMAT_ROWS, ids=lambda argv: " ".join(argv))
def test_parse_with_format_prints_byte_for_byte_what_the_flag_prints(capsys, monkeypatch, format_argv, flag_argv):
    turn = the_call_in(format_argv)
    by_format = run_cli(capsys, "parse", "--tools", STRAWBERRY, *format_argv, stdin=turn, monkeypatch=monkeypatch)
    by_flag = run_cli(capsys, "parse", "--tools", STRAWBERRY, *flag_argv, stdin=turn, monkeypatch=monkeypatch)
    assert by_format[0] == 0 and by_format[:2] == by_flag[:2]
    # the check can fail: each format reads its own call
    assert json.loads(by_format[1])["calls"] == COUNTED


@pytest.mark.parametrize(
    ("argv", "flag_argv"),
    [
        (
            ["run", "--scenario", "missing-brace", "--format", "react"],
            ["run", "--scenario", "missing-brace", "--style", "react"],
        ),
        (["run", "--scenario", "missing-brace", "--format", "qwen3"], ["run", "--scenario", "missing-brace"]),
        (
            ["mask", "--tools", STRAWBERRY, "--prefix", "<tool_call>", "--format", "native"],
            ["mask", "--tools", STRAWBERRY, "--prefix", "<tool_call>"],
        ),
        (
            ["mask", "--tools", STRAWBERRY, "--prefix", "Sure. ", "--format", "llama3.1"],
            ["mask", "--tools", STRAWBERRY, "--prefix", "Sure. ", "--family", "llama3.1"],
        ),
    ],
    ids=lambda argv: " ".join(argv[:1] + argv[-2:]),
)
def test_run_and_mask_with_format_print_what_the_flag_prints(capsys, argv, flag_argv):
    by_format, by_flag = run_cli(capsys, *argv), run_cli(capsys, *flag_argv)
    assert by_format[0] == 0 and by_format[1] and by_format[:2] == by_flag[:2]


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["tokens", "--tools", STRAWBERRY, "--format", "qwen3", "--style", "react"],
            "--format qwen3 and --style react name different call formats",
        ),
        (
            ["parse", "--tools", STRAWBERRY, "--format", "react", "--family", "llama3.1"],
            "--format react and --family llama3.1 name different call formats",
        ),
        (
            ["tokens", "--tools", STRAWBERRY, "--format", "llama3.1", "--style", "react"],
            "--format llama3.1 and --style react name different call formats",
        ),
        (
            ["mask", "--tools", STRAWBERRY, "--prefix", "", "--format", "mistral", "--family", "qwen3"],
            "--format mistral and --family qwen3 name different call formats",
        ),
        # an unknown name, and a format the command cannot read: argparse lists the names it takes
        (
            ["tokens", "--tools", STRAWBERRY, "--format", "hermes"],
            "invalid choice: 'hermes' (choose from " + ", ".join(f"'{n}'" for n in format_names()) + ")",
        ),
        (
            ["run", "--scenario", "missing-brace", "--format", "llama3.1"],
            "invalid choice: 'llama3.1' (choose from 'qwen3', 'native', 'react')",
        ),
        (["mask", "--tools", STRAWBERRY, "--prefix", "", "--format", "react"], "invalid choice: 'react'"),
    ],
)
def test_format_refuses_an_unknown_name_and_flags_that_disagree_in_one_line(capsys, argv, message):
    try:
        code = main(argv)
    except SystemExit as exit_info:  # argparse's own refusals
        code = exit_info.code
    out, err = capsys.readouterr()
    assert (code, out) == (2, "") and err.startswith("error: ") and err.count("\n") == 1 and message in err, err


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


# -- issue 29: every bad input is one line and exit 2, files are read with a cap, --record writes only where asked ------
CALL = '<tool_call>\n{"name": "count_letter", "arguments": {"word": "%s", "letter": "r"}}\n</tool_call>'


def _fifo(tmp_path) -> str:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return str(path)


def _big(tmp_path) -> str:
    path = tmp_path / "big.json"
    path.write_bytes(b"[" + b" " * (8 * 2**20) + b"]")
    return str(path)


def _surrogate(tmp_path) -> str:
    path = tmp_path / "messages.json"
    path.write_text('[{"role": "user", "content": "a \\ud800 b"}]', encoding="utf-8")
    return str(path)


def _link(tmp_path) -> str:
    (tmp_path / "target.json").write_text("{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "target.json")
    return str(tmp_path / "link.json")


def _generate(tmp_path, *extra) -> list[str]:
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    return ["generate", "--model", "tiny", "--messages", str(messages), *extra]


def _eval(*extra) -> list[str]:
    return ["eval", "--model", "tiny", "--suite", "strawberry", *extra]


# (id, argv from tmp_path, stdin or None, the message stderr's one line must hold); each refused before a model loads
BAD_INPUTS = [
    (
        "parse: a lone surrogate escape",
        lambda t: ["parse", "--tools", STRAWBERRY],
        CALL % "\\ud800",
        "error: parse's input holds a lone surrogate ('\\ud800', half of a UTF-16 pair), which is not text",
    ),
    (
        "parse: 9 MB on stdin",
        lambda t: ["parse", "--tools", STRAWBERRY],
        "x" * (9 * 2**20),
        "stdin holds more than 8,388,608 bytes, the most `parse` reads",
    ),
    (
        "--tools /dev/zero",
        lambda t: ["tokens", "--tools", "/dev/zero"],
        None,
        "tools file /dev/zero is a device, not a regular file: give the path of a JSON file",
    ),
    (
        "--messages /dev/urandom",
        lambda t: ["tokens", "--tools", STRAWBERRY, "--messages", "/dev/urandom"],
        None,
        "messages file /dev/urandom is a device, not a regular file",
    ),
    ("--tools a FIFO", lambda t: ["tokens", "--tools", _fifo(t)], None, "is a FIFO, not a regular file"),
    ("--tools a folder", lambda t: ["tokens", "--tools", str(t)], None, "is a folder, not a regular file"),
    (
        "--tools over 8 MB",
        lambda t: ["tokens", "--tools", _big(t)],
        None,
        "is larger than 8,388,608 bytes, the most that is read",
    ),
    ("--tools a 3,000-character path", lambda t: ["tokens", "--tools", "t" * 3000], None, "File name too long"),
    ("--tools a path holding NUL", lambda t: ["tokens", "--tools", "a\x00b.json"], None, "a path cannot hold a NUL"),
    (
        "--messages with a lone surrogate",
        lambda t: ["tokens", "--tools", STRAWBERRY, "--messages", _surrogate(t)],
        None,
        "holds a lone surrogate ('\\ud800', half of a UTF-16 pair)",
    ),
    (
        "--max-new-tokens 1e9",
        lambda t: _generate(t, "--max-new-tokens", "1e9"),
        None,
        "argument --max-new-tokens: invalid int value: '1e9'",
    ),
    (
        "--max-new-tokens a billion",
        lambda t: _generate(t, "--max-new-tokens", "1000000000"),
        None,
        "max_new_tokens must be at most 32,768 (the reply length Qwen3's model card recommends), not 1,000,000,000",
    ),
    (
        "--max-new-tokens 30 digits",
        lambda t: _generate(t, "--max-new-tokens", "9" * 30),
        None,
        "max_new_tokens must be at most 32,768",
    ),
    (
        "--temperature nan",
        lambda t: _generate(t, "--temperature", "nan"),
        None,
        "temperature must be 0 (greedy) or a number from 0.001 to 100, not nan",
    ),
    (
        "--temperature inf",
        lambda t: _generate(t, "--temperature", "inf"),
        None,
        "temperature must be 0 (greedy) or a number from 0.001 to 100, not inf",
    ),
    (
        "--temperature 1e-320",
        lambda t: _generate(t, "--temperature", "1e-320"),
        None,
        "temperature must be 0 (greedy) or a number from 0.001 to 100, not 1e-320",
    ),
    ("--temperature 1e9", lambda t: _generate(t, "--temperature", "1e9"), None, "temperature must be at most 100"),
    ("--top-p nan", lambda t: _generate(t, "--top-p", "nan"), None, "top_p must be above 0 and at most 1, not nan"),
    ("--top-p -inf", lambda t: _generate(t, "--top-p=-inf"), None, "top_p must be above 0 and at most 1, not -inf"),
    (
        "--prefix of 4,001 characters",
        lambda t: _generate(t, "--prefix", "x" * 4001),
        None,
        "the prefix is 4,001 characters; a turn is begun with at most 4,000: give its opening words",
    ),
    (
        "--prefix with a turn marker",
        lambda t: _generate(t, "--prefix", "Done.<|endoftext|>"),
        None,
        "the prefix holds <|endoftext|>, a turn marker of the template",
    ),
    (
        "--prefix with --record",
        lambda t: _generate(t, "--prefix", "Sure", "--record", str(t / "run.json")),
        None,
        "--record keeps a turn the model wrote from its first token",
    ),
    (
        "--model of 3,000 characters",
        lambda t: _generate(t, "--model", "m" * 3000),
        None,
        "the model name is 3,000 characters, too long for a folder's path",
    ),
    (
        "--record in a folder that does not exist",
        lambda t: _generate(t, "--record", str(t / "new" / "run.json")),
        None,
        "there is no folder",
    ),
    (
        "--record a folder",
        lambda t: _generate(t, "--record", str(t)),
        None,
        "is a folder; give the path of a new or regular file",
    ),
    ("--record ending in /", lambda t: _generate(t, "--record", str(t / "x") + "/"), None, "names a folder"),
    ("--record /dev/null", lambda t: _generate(t, "--record", "/dev/null"), None, "--record /dev/null is a device"),
    ("--record a FIFO", lambda t: _generate(t, "--record", _fifo(t)), None, "is a FIFO"),
    ("--record a symbolic link", lambda t: _generate(t, "--record", _link(t)), None, "is a symbolic link"),
    (
        "--record a 300-character name",
        lambda t: _generate(t, "--record", str(t / ("n" * 300))),
        None,
        "--record's file name is 300 bytes; a name may be up to 255",
    ),
    (
        "--record a 5,000-byte path",
        lambda t: _generate(t, "--record", "/".join(["d" * 99] * 50)),
        None,
        "--record's path is 4,999 bytes; a path may be up to 4,096",
    ),
    # issue 46: eval's numbers, generate's seed and --record's name, checked before the work (--out: test_pack.py)
    (
        "eval --max-new-tokens 0",
        lambda t: _eval("--max-new-tokens", "0"),
        None,
        "--max-new-tokens must be at least 1, not 0 (leave it out for the suite's)",
    ),
    (
        "eval --max-new-tokens -5",
        lambda t: _eval("--max-new-tokens", "-5"),
        None,
        "--max-new-tokens must be at least 1, not -5",
    ),
    (
        "eval --max-new-tokens 3,000 digits",
        lambda t: _eval("--max-new-tokens", "9" * 3000),
        None,
        "argument --max-new-tokens: a number of 3,000 digits; at most 100 are read: give a whole number such as 3",
    ),
    ("eval --seeds 0", lambda t: _eval("--seeds", "0"), None, "--seeds must be at least 1, not 0"),
    ("eval --seeds -1", lambda t: _eval("--seeds", "-1"), None, "--seeds must be at least 1, not -1"),
    (
        "eval --seeds 5,000 digits",
        lambda t: _eval("--seeds", "9" * 5000),
        None,
        "argument --seeds: a number of 5,000 digits; at most 100 are read",
    ),
    (
        "eval --seeds 90 digits",
        lambda t: _eval("--seeds", "9" * 90),
        None,
        "over the cap of 400,000: lower --seeds, --max-new-tokens or --limit",
    ),
    ("eval --limit 0", lambda t: _eval("--limit", "0"), None, "--limit must be at least 1, not 0"),
    ("eval --limit -3", lambda t: _eval("--limit=-3"), None, "--limit must be at least 1, not -3"),
    (
        "eval --limit 4,400 digits",
        lambda t: _eval("--limit", "-" + "9" * 4400),
        None,
        "argument --limit: a number of 4,400 digits; at most 100 are read",
    ),
    ("eval --seeds 2.5", lambda t: _eval("--seeds", "2.5"), None, "argument --seeds: invalid int value: '2.5'"),
    (
        "generate --seed -1",
        lambda t: _generate(t, "--seed", "-1"),
        None,
        "seed must be a whole number from 0 to 2,147,483,647, not -1",
    ),
    (
        "generate --seed 30 digits",
        lambda t: _generate(t, "--seed", "9" * 30),
        None,
        "seed must be a whole number from 0 to 2,147,483,647, not 999,999,",
    ),
    (
        "generate --top-k 5,000 digits",
        lambda t: _generate(t, "--top-k", "9" * 5000),
        None,
        "argument --top-k: a number of 5,000 digits; at most 100 are read",
    ),
    (
        "--record named like a flag",
        lambda t: _generate(t, "--record", str(t / "-v.json")),
        None,
        "the name '-v.json' starts with '-' and would read as a flag to other commands",
    ),
]


@pytest.mark.parametrize("argv, stdin, message", [pytest.param(*row[1:], id=row[0]) for row in BAD_INPUTS])
def test_each_bad_input_is_one_line_and_exit_2(capsys, monkeypatch, tmp_path, argv, stdin, message):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))

    # each is refused before a model loads: building the tiny model (the rows' --model) fails the row, and none is
    # kept from an earlier test
    def load(*args, **kwargs):
        raise AssertionError("the tiny model was built before the bad input was refused")

    monkeypatch.setattr("engine.model.loading._loaded", {})
    monkeypatch.setattr("engine.model.loading.build_tiny", load)
    started = time.perf_counter()
    try:
        code = main(argv(tmp_path))
    except SystemExit as exit_info:  # argparse's own refusals
        code = exit_info.code
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert time.perf_counter() - started < 30
    # --record never creates a folder
    assert not (tmp_path / "new").exists()


def test_stdin_that_is_not_utf8_is_one_line(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Action: a\xff")))
    code = main(["parse", "--tools", STRAWBERRY])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "") and err == "error: stdin is not UTF-8 text (byte 9 is not): give the turn as UTF-8\n"


def test_dev_zero_as_a_process_is_refused_at_once_without_reading(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "engine", "tokens", "--tools", "/dev/zero"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "is a device" in done.stderr
