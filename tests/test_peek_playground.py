"""The small helpers behind lessons 5-6 and the playground: one-step probabilities, checked workspaces."""

from __future__ import annotations

import pytest

from engine.core.call_formats import lesson_format_names
from engine.core.generation import Alternative, DecodeStep
from engine.core.prompt import Request, render
from engine.core.tokenizer import TOOL_CALL
from engine.core.tooldefs import load_tool_set
from engine.harness.playground import check_files, fresh_workspace, snapshot
from engine.model.peek import MAX_POSITIONS, first_token, logits_at_each_position, next_logits, p_in_trace_step
from engine.sandbox.workspace import Limits


def test_first_token_matches_the_decode_loop(tiny_engine):
    from engine.core.generation import GenerationSettings
    from engine.model.decode import stream_steps

    prompt = render(
        Request([{"role": "user", "content": "What is the capital of France?"}], load_tool_set("strawberry"))
    )
    first = first_token(tiny_engine, prompt.ids, top_k=5)
    step = next(stream_steps(tiny_engine, prompt.ids, GenerationSettings(max_new_tokens=1, top_k=5)))
    assert [a.id for a in first.top] == [a.id for a in step.top]
    assert first.top[0].p == pytest.approx(step.top[0].p, rel=1e-5)
    assert 0.0 <= first.p[TOOL_CALL] <= 1.0 and first.watched == ["<tool_call>"]
    assert first.model.random_weights
    logits = next_logits(tiny_engine, prompt.ids)
    assert logits.shape[0] == 151936 and logits[151669:].isinf().all()


def test_logits_at_each_position_are_next_logits_at_each_prefix(tiny_engine):
    from engine.errors import BadInput

    prompt = render(
        Request([{"role": "user", "content": "How many r are in strawberry?"}], load_tool_set("strawberry"))
    )
    reply = tiny_engine.tokenizer.encode('<tool_call>\n{"name": "count_letter", "arguments": {"word": "strawberry"}}')
    every = logits_at_each_position(tiny_engine, prompt.ids, reply)
    assert every.shape == (len(reply), 151936) and every[:, 151669:].isinf().all()
    for n in range(len(reply)):  # one pass over the whole reply gives what one pass per prefix gives
        alone = next_logits(tiny_engine, prompt.ids + reply[:n])
        assert (every[n, :151669] - alone[:151669]).abs().max() < 1e-4, n
        assert int(every[n].argmax()) == int(alone.argmax())
    assert logits_at_each_position(tiny_engine, prompt.ids, []).shape == (0, 151936)
    with pytest.raises(BadInput, match="too long"):
        logits_at_each_position(tiny_engine, prompt.ids, [0] * (MAX_POSITIONS + 1))


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


# -- a scripted episode on a workspace the learner edited -------------------------------------------
def _play(name: str, style: str, files: dict[str, str]):
    from engine.harness.loop import Run, load_scenario
    from engine.harness.playground import play_script

    scenario = load_scenario(name)
    run, departures = Run(style, "per-block"), []
    with fresh_workspace(files) as workspace:
        steps = list(play_script(scenario, style, workspace, run, 8, departures))
    return run, steps, departures


@pytest.mark.parametrize("style", lesson_format_names())
def test_the_script_on_its_own_files_runs_to_its_answer_like_run_scenario(style):
    from engine.harness.loop import STOP_FINAL, load_scenario, run_scenario

    scenario = load_scenario("missing-brace")
    run, steps, departures = _play("missing-brace", style, scenario.files)
    expected = run_scenario(scenario, style)
    assert departures == [] and run.stop_reason == STOP_FINAL and run.answer == expected.answer
    assert [s.cost.input_tokens for s in steps] == [c.input_tokens for c in expected.ledger.calls]


EDITS = [
    # scenario, file edit (None removes), call that departs, tool, words in the script's result, in the real one
    pytest.param(
        "missing-brace", {"test_calc.py": None}, 1, "list_files", "test_calc.py", "calc.py", id="tests-removed-listing"
    ),
    pytest.param(
        "missing-brace",
        {"calc.py": "def add(a, b):\n    return a + b\n"},
        3,
        "read_file",
        "return a - b",
        "return a + b",
        id="calc-already-fixed",
    ),
    pytest.param(
        "missing-brace", {"notes.txt": "hello"}, 1, "list_files", "calc.py\ntest_calc.py", "notes.txt", id="file-added"
    ),
]


@pytest.mark.parametrize(("name", "edit", "call", "tool", "assumed", "got"), EDITS)
def test_the_script_stops_where_a_real_result_departs_from_it(name, edit, call, tool, assumed, got):
    from engine.harness.loop import load_scenario
    from engine.harness.playground import STOP_DEPARTED

    files = dict(load_scenario(name).files)
    for path, body in edit.items():
        if body is None:
            files.pop(path)
        else:
            files[path] = body
    run, steps, departures = _play(name, "native", files)
    assert len(departures) == 1 and run.stop_reason == STOP_DEPARTED and run.answer is None
    departure = departures[0]
    assert (departure.call, departure.tool, len(steps)) == (call, tool, call)
    assert assumed in departure.expected and got in departure.actual and departure.expected != departure.actual


def test_removing_the_tests_no_longer_ends_with_both_tests_pass():
    """The case that was seen: run_tests finds no test file, yet the fixed final answer said both tests pass."""
    from engine.harness.loop import load_scenario
    from engine.harness.playground import expected_results

    scenario = load_scenario("missing-brace")
    # with the listing kept as the script assumes, only run_tests can tell the difference
    files = {"calc.py": scenario.files["calc.py"]}
    run, steps, departures = _play("missing-brace", "native", files)
    assert departures and departures[0].call == 1  # the listing already differs: the script stops at once
    assert all("both tests pass" not in s.turn.text for s in steps)
    assumed = expected_results(scenario, "native", 8)
    assert "Ran 2 tests" in assumed[5][0] and len(assumed) == 7
