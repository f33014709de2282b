"""One colour language: every colour the pages, views and charts use is ui/palette.py's, each meaning has its own
colour, and a legend sits wherever colour carries meaning. Also: a page that cannot draw its run still ends
normally, so presenter mode's "Section k of n" is drawn.

The source checks read the files; the page checks run the pages in streamlit's AppTest (no model, no browser).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import open_page, page_text, view_data

from engine.harness.loop import load_scenario, run_scenario
from ui.palette import MEANINGS, NEUTRALS, all_colours, legend_html, view_palette
from ui.views.loop_view import run_end, run_frames

ROOT = Path(__file__).resolve().parent.parent
# every file that may colour something: the pages, their shared parts, the stylesheets and the browser views
COLOURED = sorted(
    [
        *ROOT.glob("app_pages/*.py"),
        *ROOT.glob("ui/*.py"),
        *ROOT.glob("ui/*.css"),
        *ROOT.glob("ui/views/*.py"),
        *ROOT.glob("ui/views/*.js"),
        *ROOT.glob("ui/views/*.css"),
        *ROOT.glob("ui/views/*.html"),
    ]
)
HEX = re.compile(r"#(?:[0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b(?![0-9a-fA-F])")
# a colour's name as a value: in a string ("red") or after a CSS property (color: red)
NAMES = "red|green|blue|orange|purple|yellow|pink|crimson|gold|white|black|gray|grey|navy|teal|brown|magenta|cyan|lime|maroon|olive|silver|violet"
NAMED = re.compile(
    rf"""["']({NAMES})["']|(?<![\w-])(?:color|background|fill|stroke|outline|border[\w-]*)\s*:[^;{{}}]*?(?<![\w-])({NAMES})(?![\w-])"""
)
FUNCTIONAL = re.compile(r"\b(?:rgba?|hsla?)\(([^)]*)\)")


def six(colour: str) -> str:
    colour = colour.lower()
    return "#" + "".join(c * 2 for c in colour[1:]) if len(colour) == 4 else colour


def hex_colours(text: str) -> list[str]:
    # (an html entity such as &#123; is not a colour)
    return [six(m.group(0)) for m in HEX.finditer(text) if text[max(m.start() - 1, 0)] != "&"]


@pytest.mark.parametrize(
    "path", [p for p in COLOURED if p.name != "palette.py"], ids=lambda p: str(p.relative_to(ROOT))
)
def test_no_file_names_a_colour_outside_the_palette(path):
    text = path.read_text(encoding="utf-8")
    outside = [c for c in hex_colours(text) if c not in all_colours()]
    assert not outside, f"{path.name} uses colours that are not in ui/palette.py: {outside}"
    named = [m.group(1) or m.group(2) for m in NAMED.finditer(text)]
    assert not named, f"{path.name} names colours: {named} (take them from ui/palette.py)"
    # rgb()/hsl() only for greys (a shadow, a border): a coloured one would be a meaning outside the palette
    for args in FUNCTIONAL.findall(text):
        channels = [c.strip() for c in args.split(",")[:3]]
        assert len(set(channels)) == 1, f"{path.name} uses a coloured rgb()/hsl(): {args}"


@pytest.mark.parametrize(
    "path",
    [p for p in COLOURED if p.suffix in (".py", ".js") and p.name != "palette.py"],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_pages_and_views_name_no_colour_at_all_but_take_it_by_meaning(path):
    # the Python and JavaScript take colours by meaning (ink("failed"), var(--pal-failed)), never as a literal
    assert not hex_colours(path.read_text(encoding="utf-8")), f"{path.name} writes a colour literally"


def test_each_meaning_has_a_colour_of_its_own():
    inks = [m.ink.lower() for m in MEANINGS.values()]
    fills = [m.fill.lower() for m in MEANINGS.values()]
    assert len(set(inks)) == len(inks) and len(set(fills)) == len(fills)
    assert not (set(inks) | set(fills)) & {c.lower() for c in NEUTRALS.values()}
    # the three meanings red used to carry are three colours now
    assert len({MEANINGS["now"].ink, MEANINGS["failed"].ink, MEANINGS["chosen"].ink}) == 3


def test_the_stylesheets_colour_each_meaning_by_its_own_variable():
    # the rules that once were all red: the loop's stage now, lesson 4's failed check, the step view's chosen bar
    css = {
        name: (ROOT / name).read_text(encoding="utf-8")
        for name in ("ui/style.css", "ui/views/step_view.css", "ui/views/loop_view.css")
    }
    rules = {
        ("ui/views/loop_view.css", ".lv-svg .stage.lit .box"): "--pal-now",
        ("ui/views/loop_view.css", ".lv-svg .stage.lit .halo"): "--pal-now",
        ("ui/views/step_view.css", ".sv-chip.now"): "--pal-now",
        ("ui/views/step_view.css", ".sv-bar.chosen .fill"): "--pal-chosen",
        ("ui/views/step_view.css", ".sv-chip.bad"): "--pal-failed",
        ("ui/style.css", "table.checks tr.fail td.v"): "--pal-failed",
        ("ui/style.css", "table.checks tr.pass td.v"): "--pal-passed",
        ("ui/style.css", ".tok.now"): "--pal-now",
    }
    for (name, selector), variable in rules.items():
        found = re.search(re.escape(selector) + r"\s*\{([^}]*)\}", css[name])
        assert found, (name, selector)
        used = set(re.findall(r"var\((--pal-[\w-]+)\)", found.group(1)))
        assert used and all(v.startswith(variable) for v in used), (selector, used)
    # every variable a stylesheet reads is one the palette defines
    defined = set(view_palette())
    for name, text in css.items():
        assert set(re.findall(r"var\((--pal-[\w-]+)\)", text)) <= defined, name


def test_a_legend_names_each_colour_in_words():
    shown = legend_html("passed", "failed", "neutral-fill", words={"neutral-fill": "nothing restricted"})
    assert shown.count('class="pal-item"') == 3
    assert MEANINGS["passed"].words in shown and MEANINGS["failed"].words in shown and "nothing restricted" in shown
    assert 'class="pal-swatch pal-neutral-fill"' in shown


# -- the views: the palette sent with the data, and a legend of the colours the run uses ------------------------------
def legend_meanings(data: dict) -> list[str]:
    return [meaning for meaning, _ in data["legend"]]


def test_lesson_3_step_view_has_the_palette_and_a_legend_of_its_colours():
    at = open_page("app_pages/the_model_writes_a_call.py", model="off")
    data = view_data(at, "the_model_writes_a_call_view")
    assert data["palette"] == view_palette()
    kinds = {step["kind"] for step in data["steps"]}
    expected = ["now"] + (["control"] if "sp" in kinds else [])  # (a plain token has no meaning to name)
    expected += ["chosen"] if any(r["chosen"] for s in data["steps"] for b in s["bars"] for r in b["rows"]) else []
    assert legend_meanings(data) == expected and "control" in expected
    # a bar's figure is left to the view, which formats it by the site's percent rule (ui/views/numbers.js)
    assert all(r["text"] == "" for s in data["steps"] for b in s["bars"] for r in b["rows"])


def test_lesson_4_calls_are_coloured_by_their_verdict_not_by_turns():
    at = open_page("app_pages/check_run_return.py")
    data = view_data(at, "check_run_return_view")
    run = run_scenario(load_scenario("missing-brace"), "native")
    for step, call in zip(data["steps"], run.calls, strict=True):
        failed = any(not r.ok for r in call.results) or call.parse.returned_as_text
        assert step["kind"] == ("bad" if failed else ("" if call.parse.final else "ok")), step["chip"]
    assert {s["kind"] for s in data["steps"]} == {"bad", "ok", ""}
    assert legend_meanings(data) == ["now", "passed", "failed", "neutral"]
    words = dict(data["legend"])
    assert "failed" in words["failed"] and "answer" in words["neutral"] and words["now"] == "shown now"


def test_lesson_6_chart_takes_its_colours_from_the_palette_and_has_a_legend():
    at = open_page("app_pages/constrained_decoding.py")
    chart = next(c for c in at.get("plotly_chart") if "constrained_decoding_allowed_chart" in c.proto.id)
    colours = {six(c) for c in json.loads(chart.proto.spec)["data"][0]["marker"]["color"]}
    assert colours <= {MEANINGS["now"].ink, MEANINGS["neutral"].ink, MEANINGS["neutral"].fill}
    assert MEANINGS["now"].ink in colours  # the step the view is at
    legends = [m.value for m in at.markdown if "pal-legend" in m.value]
    assert any('data-meaning="now"' in v and 'data-meaning="neutral"' in v for v in legends)


def test_ledger_charts_colour_input_and_output_from_the_palette():
    at = open_page("app_pages/check_run_return.py")
    chart = next(c for c in at.get("plotly_chart") if "check_run_return_ledger_chart" in c.proto.id)
    traces = json.loads(chart.proto.spec)["data"]
    assert [six(t["marker"]["color"]) for t in traces] == [MEANINGS["neutral"].ink, MEANINGS["written"].ink]
    assert all(t["name"] for t in traces)  # plotly's own legend names them


def test_home_loop_plays_the_run_with_its_verdicts_then_ends_unlit():
    at = open_page("app_pages/home.py")
    data = view_data(at, "home_loop")
    calls = run_scenario(load_scenario("strawberry"), "native").calls
    assert data["frames"] == [list(f) for f in run_frames(calls)] and data["end"] == run_end(calls)
    assert data["end"].startswith("The run is over") and "Replay" in data["end"]
    verdicts = {f[2] for f in data["frames"]}
    assert "passed" in verdicts and verdicts <= {"", "passed", "failed"}
    assert legend_meanings(data)[0] == "now" and "passed" in legend_meanings(data)
    assert data["palette"] == view_palette()


def test_the_playground_loop_shows_a_failed_check_in_the_failed_colour():
    frames = run_frames(run_scenario(load_scenario("missing-brace"), "native").calls)
    assert ("checks", "failed") in {(f[0], f[2]) for f in frames} and ("checks", "passed") in {
        (f[0], f[2]) for f in frames
    }
    assert all(f[2] == "" for f in frames if f[0] in ("model", "text", "parser", "prompt"))


# -- a page that cannot draw its run ends normally: projected, "Section k of n" is still there -------------------------
BAR = re.compile(r"Section (\d+) of (\d+)")


def section_bar(at) -> tuple[int, int] | None:
    found = BAR.search("\n".join(m.value for m in at.markdown))
    return (int(found.group(1)), int(found.group(2))) if found else None


def test_calculator_with_broken_tools_still_draws_the_section_bar_projected():
    at = open_page("app_pages/calculator.py", present="1", section="2")  # the editor is the second screen
    assert section_bar(at)[0] == 2
    at.text_area(key="calculator_json").input("[{not json").run()
    assert not at.exception
    assert any("Fix the tool definitions" in i.value for i in at.info)
    assert section_bar(at)[0] == 2 and section_bar(at)[1] >= 3
    assert "Model calls" not in [m.label for m in at.metric]  # the run's figures are not drawn


def test_calculator_with_broken_tools_unprojected_says_why_and_draws_no_run():
    at = open_page("app_pages/calculator.py")
    at.text_area(key="calculator_json").input("[{not json").run()
    assert not at.exception and any("Fix the tool definitions" in i.value for i in at.info)
    assert not at.metric and "What to notice" in page_text(at)


@pytest.mark.parametrize("scenario, other", [("fenced-input", "native"), ("mixed-turn", "react")])
def test_lesson_4_scenario_in_a_missing_style_still_draws_the_section_bar_projected(scenario, other):
    at = open_page("app_pages/check_run_return.py", present="1", scenario=scenario, style=other)
    assert not at.exception
    assert at.button(key="check_run_return_switch_style")  # the warning and its button
    assert section_bar(at) is not None and section_bar(at) == (1, section_bar(at)[1]) and section_bar(at)[1] >= 2
    assert not [e for e in at.get("bidi_component") if e.key == "check_run_return_view"]


# -- the playground projected: Run and its loop on one screen, and a run adds no sections -------------------------------
def test_playground_projected_run_and_loop_share_the_first_section_and_a_run_adds_none():
    at = open_page("app_pages/playground.py", present="1")
    before = section_bar(at)
    assert before[0] == 1
    assert at.button(key="playground_run") and view_data(at, "playground_loop")["frames"] == []
    at.button(key="playground_run").click().run()
    assert not at.exception
    after = section_bar(at)
    assert after == before  # the same sections, however many calls the run made
    calls = run_scenario(load_scenario("missing-brace"), "native").calls
    loop = view_data(at, "playground_loop")  # still section 1, now playing the run
    assert loop["frames"] == [list(f) for f in run_frames(calls)] and loop["end"] == run_end(calls)
    assert any(s.label.startswith(f"Done: {len(calls)} calls") for s in at.status)


def test_playground_projected_shows_one_call_at_a_time_picked_by_number():
    at = open_page("app_pages/playground.py", present="1", section="4")  # the calls' section
    assert "Nothing here yet" in page_text(at)
    at.session_state["present_section"] = 1
    at.run()
    at.button(key="playground_run").click().run()
    at.session_state["present_section"] = 4
    at.run()
    assert section_bar(at)[0] == 4
    calls = run_scenario(load_scenario("missing-brace"), "native").calls
    picker = at.segmented_control(key="playground_call")
    assert picker.options == [f"call {n}" for n in range(1, len(calls) + 1)] and picker.value == 1
    assert [m.value for m in at.markdown if m.value.startswith("**Call ")] == [
        f"**Call 1** · {calls[0].cost.input_tokens:,} tokens in · {calls[0].cost.output_tokens:,} out"
    ]
    picker.set_value(len(calls)).run()
    assert [m.value.split("**")[1] for m in at.markdown if m.value.startswith("**Call ")] == [f"Call {len(calls)}"]
    assert any("final answer" in s.value for s in at.success)


def test_playground_read_alone_is_the_same_page_run_first_one_call_at_a_time():
    at = open_page("app_pages/playground.py")
    assert "Nothing here yet" in page_text(at)
    keys = [e.key for e in at.main if getattr(e, "key", None)]
    # the demo before the files: Run and its loop come before the workspace's first field, read alone as projected
    assert keys.index("playground_run") < keys.index("playground_path_0")
    at.button(key="playground_run").click().run()
    calls = run_scenario(load_scenario("missing-brace"), "native").calls
    assert at.segmented_control(key="playground_call").options == [f"call {n}" for n in range(1, len(calls) + 1)]
    assert [m.value.split("**")[1] for m in at.markdown if m.value.startswith("**Call ")] == ["Call 1"]
