"""The check beyond the schema (engine/harness/grounding.py): a call's one-line values the model was never shown."""

from __future__ import annotations

import json

import pytest

from engine.core.generation import Turn
from engine.harness.grounding import UnseenValue, unseen_values
from engine.harness.loop import Run, ScriptedModel, iterate_episode, list_scenarios, load_scenario, run_scenario
from engine.harness.playground import fresh_workspace

COUNT_TOOLS = load_scenario("strawberry").tools
FILE_TOOLS = load_scenario("missing-brace").tools


def call_text(name: str, arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def first_call_unseen(question: str, name: str, arguments: dict, tools=COUNT_TOOLS, files=None, earlier=()):
    """Run one scripted call (after `earlier` turns) for `question`; the unseen values of the last call."""
    texts = [*earlier, call_text(name, arguments), "Done."]
    turns = [Turn(text, "stop", 10, []) for text in texts]
    run = Run("native", "per-block")
    with fresh_workspace(files or {"calc.py": "x = 1\n"}) as workspace:
        messages = [{"role": "user", "content": question}]
        for _ in iterate_episode(ScriptedModel(turns), messages, tools, workspace=workspace, max_turns=6, run=run):
            pass
    return unseen_values(run.calls[len(earlier)], run.messages)


# question, tool, arguments -> what is flagged (tool, argument, value)
CASES = {
    "a word the question never wrote": (
        "How many s in mississippi?",
        "count_letter",
        {"word": "misscancer", "letter": "s"},
        [("count_letter", "word", "misscancer")],
    ),
    "the word copied, in another case": (
        "How many s in Mississippi?",
        "count_letter",
        {"word": "mississippi", "letter": "S"},
        [],
    ),
    "the spelling the issue saw": (
        "How many e's are in cheeseburger?",
        "count_letter",
        {"word": "m misogynunitionez", "letter": "e"},
        [("count_letter", "word", "m misogynunitionez")],
    ),
}


@pytest.mark.parametrize(("question", "name", "arguments", "flagged"), list(CASES.values()), ids=list(CASES))
def test_a_value_the_question_never_wrote_is_flagged_and_a_copied_one_is_not(question, name, arguments, flagged):
    found = first_call_unseen(question, name, arguments)
    assert [(v.tool, v.argument, v.value) for v in found] == flagged


def test_a_value_read_in_a_tool_result_counts_as_shown_and_the_models_own_words_do_not():
    files = {"notes.txt": "hi\n", "a.txt": "a\n"}
    read_notes = ("What is in my notes?", "read_file", {"path": "notes.txt"}, FILE_TOOLS, files)
    # the listing's result names notes.txt: copied from it
    assert first_call_unseen(*read_notes, earlier=[call_text("list_files", {"dir": "."})]) == []
    # the model naming it in its own earlier turn grounds nothing: only what it was shown does
    said = "I will read notes.txt after a.txt.\n" + call_text("read_file", {"path": "a.txt"})
    assert first_call_unseen(*read_notes, earlier=[said]) == [UnseenValue("read_file", "path", "notes.txt")]


def test_a_files_new_content_a_long_value_and_a_failed_call_are_not_checked():
    assert first_call_unseen(
        "Save a greeting", "write_file", {"path": "hello.txt", "content": "hello there"}, FILE_TOOLS
    ) == [UnseenValue("write_file", "path", "hello.txt")]
    long_value = "x" * 81
    assert first_call_unseen("Read it", "read_file", {"path": long_value}, FILE_TOOLS) == []
    # a call the harness refused (an unknown tool) ran nothing, so there is nothing to flag
    assert first_call_unseen("Count it", "count_letters", {"word": "zzz", "letter": "z"}) == []


def test_of_the_scripted_runs_only_a_worked_out_file_name_is_flagged():
    flagged = {}
    for name in list_scenarios():
        scenario = load_scenario(name)
        for style in scenario.turns:
            run = run_scenario(scenario, style)
            for number, call in enumerate(run.calls, 1):
                for value in unseen_values(call, run.messages):
                    flagged[(name, style, number)] = (value.tool, value.argument, value.value)
    # "Show me calc.py and its tests": the model works out test_calc.py, right, and still not copied
    assert flagged == {("mixed-turn", "native", 2): ("read_file", "path", "test_calc.py")}


def test_the_playground_shows_beside_the_passing_checks_that_a_value_was_not_copied():
    from helpers import open_page

    from engine.core.markdown_text import escape_markdown

    at = open_page("app_pages/playground.py", scenario="mixed-turn", timeout=120)
    at.button(key="playground_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    notices = lambda: [i.value for i in at.info if "Not copied" in i.value]  # noqa: E731
    assert notices() == []  # call 1 reads calc.py, named in the question
    at.segmented_control(key="playground_call").set_value(2).run()
    [shown] = notices()
    assert f"`read_file`'s `path` is “{escape_markdown('test_calc.py')}”" in shown
    assert "the schema checked that it is a string, not which string" in shown.lower().replace("\n", " ")
