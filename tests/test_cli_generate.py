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


@pytest.mark.slow
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


# -- generate --prefix: the turn begun for the model, which continues after it ---------------------------------------
STRAWBERRY = ROOT / "lessons" / "tools" / "strawberry.json"
BEGUN_CALL = '<tool_call>\n{"name": "tokenize"'


def greedy(capsys, messages_file, *extra):
    """A greedy generate with the strawberry tools (its JSON; the run must succeed)."""
    argv = ["generate", "--model", "tiny", "--messages", messages_file, "--tools", STRAWBERRY, "--temperature", 0]
    code, result, err = run_cli(capsys, *argv, *extra)
    assert code == 0, err
    return result


def test_generate_with_a_prefix_continues_after_it(tiny_engine, capsys, messages_file):
    import torch

    from engine.core.prompt import Request, render

    result = greedy(capsys, messages_file, "--prefix", BEGUN_CALL, "--max-new-tokens", 5)
    tok = tiny_engine.tokenizer
    prefix_ids = tok.encode(BEGUN_CALL)
    steps = result["steps"]
    assert result["text"].startswith(BEGUN_CALL) and 0 < len(steps) <= 5
    assert result["prefix"] == {"text": BEGUN_CALL, "ids": prefix_ids}
    # "text" is the whole turn: the prefix's ids, then the steps' ids
    assert tok.decode(prefix_ids + [s["id"] for s in steps]) == result["text"]
    # the first step is the model's most likely token after the prompt and the prefix (one plain forward pass)
    prompt = render(Request(MESSAGES, json.loads(STRAWBERRY.read_text(encoding="utf-8"))), tok)
    assert result["prompt_tokens"] == prompt.count + len(prefix_ids)
    with torch.no_grad():
        logits = tiny_engine.model(input_ids=torch.tensor([prompt.ids + prefix_ids])).logits[0, -1]
    assert steps[0]["id"] == int(logits[:151669].argmax())


@pytest.mark.parametrize(
    ("extra", "written"),
    [
        # free text: the tiny model's first token, "\n\n", as the prefix
        ([], 1),
        # under a grammar, which the prefix moves on: "<tool_call>", "\n", "{"
        (["--tool-choice", "required"], 3),
        (["--tool-choice", "count_letter"], 3),
    ],
)
def test_a_greedy_turn_begun_with_its_own_first_tokens_goes_on_as_it_went(
    tiny_engine, capsys, messages_file, extra, written
):
    whole = greedy(capsys, messages_file, *extra, "--max-new-tokens", 8)
    prefix = "".join(s["text"] for s in whole["steps"][:written])
    # the prefix is what the model wrote: its own tokens, read back as the same ids
    assert tiny_engine.tokenizer.encode(prefix) == [s["id"] for s in whole["steps"][:written]]
    begun = greedy(capsys, messages_file, *extra, "--prefix", prefix, "--max-new-tokens", 8 - written)
    assert begun["text"] == whole["text"]
    assert [s["id"] for s in begun["steps"]] == [s["id"] for s in whole["steps"][written:]]
    assert [s["allowed"] for s in begun["steps"]] == [s["allowed"] for s in whole["steps"][written:]]
    for after, before in zip(begun["steps"], whole["steps"][written:], strict=True):
        assert after["p"] == pytest.approx(before["p"], abs=1e-5)


@pytest.mark.parametrize(
    "extra, message",
    [
        # a prefix that leaves the named tool's grammar: refused, not decoded past
        (
            ["--tool-choice", "count_letter", "--prefix", BEGUN_CALL],
            "the prefix leaves the grammar at token 7 'token' after '<tool_call>\\n{\"name\": \"'",
        ),
        (["--prefix", "x" * 4001], "the prefix is 4,001 characters; a turn is begun with at most 4,000"),
        (["--prefix", "Done.<|im_end|>"], "the prefix holds <|im_end|>, a turn marker of the template"),
        (["--prefix", "a\udcff"], "the prefix holds '\\udcff' at character 2, which is not text"),
        (["--prefix", "Sure", "--record", "run.json"], "--record keeps a turn the model wrote from its first token"),
    ],
)
def test_generate_refuses_a_prefix_it_cannot_begin_in_one_line(tiny_engine, capsys, messages_file, extra, message):
    argv = ["generate", "--model", "tiny", "--messages", messages_file, "--tools", STRAWBERRY, "--max-new-tokens", 2]
    code, _, err = run_cli(capsys, *argv, *extra)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and message in err, err


# -- generate --top-p: sampling from the nucleus --------------------------------------------------------------------
def sampled(capsys, messages_file, *extra) -> list[int]:
    """The ids of a seeded, sampled generate (temperature 1, 6 tokens)."""
    argv = ["generate", "--model", "tiny", "--messages", messages_file, "--max-new-tokens", 6, "--seed", 3]
    code, result, err = run_cli(capsys, *argv, "--temperature", 1, *extra)
    assert code == 0, err
    return [s["id"] for s in result["steps"]]


def test_top_p_1_draws_as_no_top_p_and_a_tiny_top_p_as_greedy(tiny_engine, capsys, messages_file):
    drawn = sampled(capsys, messages_file)
    assert sampled(capsys, messages_file, "--top-p", 1.0) == drawn
    greedy_ids = sampled(capsys, messages_file, "--temperature", 0)
    # the check can fail: this seed's free draw leaves the greedy path
    assert drawn != greedy_ids
    assert sampled(capsys, messages_file, "--top-p", 1e-6) == greedy_ids


@pytest.mark.parametrize("top_p", ["0", "1.5", "-0.1"])
def test_top_p_outside_0_to_1_is_one_line(tiny_engine, capsys, messages_file, top_p):
    code, _, err = run_cli(capsys, "generate", "--model", "tiny", "--messages", messages_file, "--top-p", top_p)
    assert code == 2 and err == f"error: top_p must be above 0 and at most 1, not {float(top_p)}\n"


def test_sample_top_k_cuts_the_draw_and_top_k_only_reports(tiny_engine, capsys, messages_file):
    """--sample-top-k 1 draws the greedy turn at any temperature; 0 is no cut; --top-k never changes the draw."""
    drawn = sampled(capsys, messages_file)
    greedy_ids = sampled(capsys, messages_file, "--temperature", 0)
    assert drawn != greedy_ids  # (the check can fail: this seed's free draw leaves the greedy path)
    assert sampled(capsys, messages_file, "--sample-top-k", 1) == greedy_ids
    assert sampled(capsys, messages_file, "--sample-top-k", 0) == drawn
    assert sampled(capsys, messages_file, "--top-k", 2) == drawn


@pytest.mark.parametrize("k", ["-1", "1001"])
def test_sample_top_k_out_of_range_is_one_line(tiny_engine, capsys, messages_file, k):
    code, _, err = run_cli(capsys, "generate", "--model", "tiny", "--messages", messages_file, "--sample-top-k", k)
    assert code == 2 and err.count("\n") == 1 and ("sample_top_k" in err or "whole number" in err), err
