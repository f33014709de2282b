"""The small helpers behind lessons 5-6 and the playground: one-step probabilities, checked workspaces."""

from __future__ import annotations

import pytest

from engine.decode import Alternative, DecodeStep
from engine.peek import first_token, next_logits, p_in_trace_step
from engine.playground import check_files, fresh_workspace, snapshot
from engine.prompt import Request, render
from engine.tokenizer import TOOL_CALL
from engine.tools import load_tool_set
from engine.workspace import Limits


def test_first_token_matches_the_decode_loop(tiny_engine):
    from engine.decode import GenerationSettings, stream_steps

    prompt = render(Request([{"role": "user", "content": "What is the capital of France?"}], load_tool_set("strawberry")))
    first = first_token(tiny_engine, prompt.ids, top_k=5)
    step = next(stream_steps(tiny_engine, prompt.ids, GenerationSettings(max_new_tokens=1, top_k=5)))
    assert [a.id for a in first.top] == [a.id for a in step.top]
    assert first.top[0].p == pytest.approx(step.top[0].p, rel=1e-5)
    assert 0.0 <= first.p[TOOL_CALL] <= 1.0 and first.watched == ["<tool_call>"]
    assert first.model.random_weights
    logits = next_logits(tiny_engine, prompt.ids)
    assert logits.shape[0] == 151936 and logits[151669:].isinf().all()


def test_p_in_trace_step_is_exact_only_when_recorded():
    top = [Alternative(5, "a", 0.6), Alternative(TOOL_CALL, "<tool_call>", 0.3), Alternative(7, "b", 0.1)]
    assert p_in_trace_step(DecodeStep(0, 5, "a", "a", 0.6, top, None), TOOL_CALL) == (0.3, True)
    assert p_in_trace_step(DecodeStep(0, 5, "a", "a", 0.6, top[:1] + top[2:], None), TOOL_CALL) == (0.1, False)
    assert p_in_trace_step(DecodeStep(0, TOOL_CALL, "<tool_call>", "", 0.9, [], None), TOOL_CALL) == (0.9, True)


@pytest.mark.parametrize(
    ("path", "text", "words"),
    [
        ("", "x", "give the file a name"),
        ("../escape.txt", "x", "leaves the workspace"),
        ("/etc/passwd", "x", "absolute paths are not allowed"),
        ("~/notes.txt", "x", "'~' is not allowed"),
        ("sub/", "x", "names a folder"),
        (".", "x", "names a folder"),
        ("big.txt", "x" * (64 * 1024 + 1), "65,537 bytes"),
    ],
)
def test_check_files_refuses_bad_files_with_a_message(path, text, words):
    good, problems = check_files([("ok.py", "print(1)\n"), (path, text)])
    assert good == {"ok.py": "print(1)\n"}
    assert len(problems) == 1 and problems[0].index == 1 and words in problems[0].message
    assert not problems[0].message.startswith("error:")


def test_check_files_duplicates_clashes_and_total_size():
    good, problems = check_files([("a.txt", "1"), ("./a.txt", "2"), ("a.txt/b", "3")])
    assert good == {"a.txt": "1"} and [p.index for p in problems] == [1, 2]
    good, problems = check_files([("a", "xx"), ("b", "xx")], Limits(workspace_bytes=3))
    assert list(good) == ["a"] and "grow past 3 bytes" in problems[0].message


def test_fresh_workspace_is_new_each_time_and_removed():
    with fresh_workspace({"sub/a.txt": "hello"}) as first:
        (first.root / "new.txt").write_text("written by a run")
        assert snapshot(first) == {"new.txt": "written by a run", "sub/a.txt": "hello"}
        root = first.root
    assert not root.exists()
    with fresh_workspace({"sub/a.txt": "hello"}) as second:
        assert snapshot(second) == {"sub/a.txt": "hello"}
