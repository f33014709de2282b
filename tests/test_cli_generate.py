"""`python -m engine generate` and `download`, as DESIGN.md's command line contract says, with the tiny model."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from engine.__main__ import main
from engine.packs.trace import load_trace
from engine.settings import ROOT

MESSAGES = [{"role": "user", "content": "How many r are in strawberry?"}]


@pytest.fixture
def messages_file(tmp_path):
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(MESSAGES), encoding="utf-8")
    return path


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_generate_prints_the_contract_keys(tiny_engine, capsys, messages_file):
    code, result, _ = run_cli(capsys, "generate", "--model", "tiny", "--messages", messages_file, "--max-new-tokens", 5)
    assert code == 0
    assert {"text", "finish", "steps"} <= set(result) and result["finish"] == "length"
    assert len(result["steps"]) == 5
    for step in result["steps"]:
        assert {"id", "token", "p", "top", "allowed"} <= set(step) and step["allowed"] is None
        assert len(step["top"]) == 5 and all({"id", "token", "p"} <= set(t) for t in step["top"])
    assert "".join(s["text"] for s in result["steps"]) == result["text"]
    assert result["model"]["random_weights"] is True


def test_generate_with_a_seed_and_temperature_repeats(tiny_engine, capsys, messages_file):
    argv = [
        "generate",
        "--model",
        "tiny",
        "--messages",
        messages_file,
        "--max-new-tokens",
        4,
        "--temperature",
        0.8,
        "--seed",
        11,
        "--top-k",
        2,
    ]
    first = run_cli(capsys, *argv)[1]
    assert first["steps"] == run_cli(capsys, *argv)[1]["steps"]
    assert all(len(s["top"]) == 2 for s in first["steps"])


def test_generate_can_record_a_trace(tiny_engine, capsys, messages_file, tmp_path):
    path = tmp_path / "run.json"
    path.write_text("an older, longer file " * 10_000)  # replaced whole
    code, result, _ = run_cli(
        capsys, "generate", "--model", "tiny", "--messages", messages_file, "--max-new-tokens", 3, "--record", path
    )
    assert code == 0 and result["trace"] == str(path)
    assert [s.id for s in load_trace(path).steps] == [s["id"] for s in result["steps"]]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--max-new-tokens", "0"], "max_new_tokens must be at least 1"),
        (["--temperature", "-2"], "temperature must be 0"),
        (["--tool-choice", "required"], "needs tools"),
        # within the model's context: the tiny model's is 32,768 tokens, and the prompt takes some
        (["--max-new-tokens", "32768"], "past tiny's context of 32,768 tokens: ask for at most 32,7"),
        # a folder that exists but cannot be written (as root, permissions would not stop it): one line, no traceback
        (
            ["--max-new-tokens", "2", "--record", "/proc/no-such-trace.json"],
            "cannot write the trace /proc/no-such-trace",
        ),
    ],
)
def test_generate_bad_arguments_exit_2_with_one_line(tiny_engine, capsys, messages_file, extra, message):
    code, _, err = run_cli(capsys, "generate", "--model", "tiny", "--messages", messages_file, *extra)
    assert code == 2 and message in err and err.startswith("error: ") and err.count("\n") == 1, err


def test_download_of_tiny_says_there_is_nothing_to_download(capsys):
    code, _, err = run_cli(capsys, "download", "--model", "tiny")
    assert code == 2 and "nothing to download" in err


def test_download_of_a_model_that_cannot_be_fetched_fails_fast_with_the_way_out(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    code, _, err = run_cli(capsys, "download", "--model", "nobody-at-all/no-such-model-7f3a9c")
    assert code == 2 and time.perf_counter() - started < 10
    assert "python -m engine download --model nobody-at-all/no-such-model-7f3a9c" in err and "QWEN_MODEL=" in err


def test_python_dash_m_engine_generate_runs_as_a_program(messages_file):
    # one real subprocess: the module entry point, stdout JSON, exit 0 (about 5 s: torch and transformers import)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "generate",
            "--model",
            "tiny",
            "--messages",
            str(messages_file),
            "--max-new-tokens",
            "2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["finish"] == "length"


def test_generate_with_tool_choice_reports_the_allowed_counts(tiny_engine, capsys, messages_file, tmp_path):
    # the grammar comes from engine/constrain/masks.py; random weights still write a well-formed call prefix
    tools = tmp_path / "tools.json"
    tools.write_text((ROOT / "lessons" / "tools" / "strawberry.json").read_text(encoding="utf-8"), encoding="utf-8")
    code, result, err = run_cli(
        capsys,
        "generate",
        "--model",
        "tiny",
        "--messages",
        messages_file,
        "--tools",
        tools,
        "--tool-choice",
        "required",
        "--max-new-tokens",
        6,
    )
    assert code == 0, err
    assert result["text"].startswith("<tool_call>\n{")
    steps = result["steps"]
    assert steps[0]["allowed"] == 1 and steps[0]["p"] == 1.0 and steps[0]["token"] == "<tool_call>"
    assert all(s["allowed"] is not None and s["forbidden_mass"] is not None for s in steps)
