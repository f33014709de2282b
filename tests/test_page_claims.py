"""A claim a page makes is not contradicted by a figure or a fact on the same page (issue 45's six sentences).

Four kinds of fault, each read by a small function that returns what is wrong, each computed against the real
engine and tokenizer, and each shown the sentence it replaced, so a reading that could never fail is caught:

- a promise with no exception ("cannot come out malformed") where the page itself shows one;
- a caption naming something its chart does not draw ("beside the published runs");
- pointing words ("the step view above") where, projected, the thing pointed at is on another screen;
- two figures for one thing (25 tokens and 21 output tokens; 151,936 rows and 151,669 tokens) with nothing
  saying how they differ.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from helpers import open_page, page_of, page_text

from engine.core.call_formats import parse_turn
from engine.core.tokenizer import REAL_VOCAB, TOOL_CALL, load_tokenizer
from engine.harness.eval import Tally
from engine.harness.loop import load_scenario
from engine.settings import BUILTIN_FOLDER
from engine.teaching.cost import measure_malformed_cost
from ui.words import lesson

BAR = re.compile(r"\*\*Section (\d+) of (\d+)\*\*")


def sentences(text: str) -> list[str]:
    """The text's sentences, one line each (a sentence may wrap in the Markdown)."""
    flat = " ".join(text.split())
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z*`(])", flat) if s]


# -- 1. a promise with no exception, where the page shows one ------------------------------------------------------------
def promise_problems(text: str, promise: str, exception: str) -> list[str]:
    """Each sentence making `promise` (a regex) must name its `exception` (a regex) in the same sentence."""
    return [
        f"promises without its exception: {s!r}"
        for s in sentences(text)
        if re.search(promise, s, re.I) and not re.search(exception, s, re.I)
    ]


def test_lesson_6_promises_a_well_formed_call_only_with_the_cut_off_its_own_page_shows():
    at = open_page(page_of("constrained-decoding"), model="off")
    shown = page_text(at)
    # the page's own cut-off: every token the grammar allowed, and still a call the checks refuse
    cut = load_scenario("cut-off")
    text = cut.turns["native"][cut.malformed_turn].text
    assert parse_turn(text, cut.tools, "native").errors
    said = re.search(r"\*\*(\d+) of (\d+)\*\* tokens allowed, none\s+forbidden", shown)
    assert said and said.group(1) == said.group(2)
    promise, exception = r"cannot (?:come out|be) malformed|never malformed", r"token limit|cut off"
    assert re.search(promise, shown)  # the lesson still makes its promise, with the exception beside it
    assert promise_problems(shown, promise, exception) == []
    assert promise_problems("A call written this way cannot come out malformed.", promise, exception)


def test_lesson_8_says_a_reply_with_tool_call_after_prose_is_still_read_for_a_call():
    at = open_page(page_of("other-model-families"), model="off")
    shown = page_text(at)
    # what the tokenizer and the parser do with prose that holds the opener
    tok = load_tokenizer()
    strawberry = load_scenario("strawberry")
    call = strawberry.turns["native"][0].text
    prose = "The word has three of them. " + call
    assert TOOL_CALL in tok.encode(prose)
    assert [c.name for c in parse_turn(prose, strawberry.tools, "native").calls] == ["count_letter"]
    promise, exception = r"prose never|never (?:in|inside) prose|no prose", r"(?!)"
    assert promise_problems(shown, promise, exception) == []
    answer = " ".join(lesson("other-model-families")["answer 2"].split())
    assert "wherever the token stands, even after a sentence of prose" in answer
    old = "a single added token (Qwen3's tokenizer files do not flag it as special) that prose never contains, so"
    assert promise_problems(old, promise, exception)


# -- 2. a caption naming what its chart does not draw -------------------------------------------------------------------
def caption_problems(caption: str, figure: dict) -> list[str]:
    """A chart's words that say the published runs stand beside ours, against the bars it draws."""
    drawn = any(str(x).endswith("(published)") for trace in figure["data"] for x in trace.get("x") or [])
    says = "beside the published" in caption
    return (
        []
        if says == drawn
        else [f"says {'' if says else 'no '}published runs; the chart draws {'some' if drawn else 'none'}"]
    )


def fake_result(condition: str, valid: int, unusable: dict) -> SimpleNamespace:
    tally = Tally(
        runs=6, blocks=valid + sum(unusable.values()), valid=valid, runs_with_call=5, tokens_in=900, tokens_out=90
    )
    tally.unusable.update(unusable)
    return SimpleNamespace(settings=SimpleNamespace(condition=condition), total=lambda: tally)


@pytest.mark.parametrize("suite", ["harness", "no-such-suite"])
def test_measure_its_chart_words_say_published_runs_only_where_it_draws_them(suite):
    from engine.harness.eval import published_figures
    from ui.experiments import results_figure

    results = [fake_result("free", 12, {"bad_json": 1, "cut_off": 1}), fake_result("grammar", 13, {"cut_off": 1})]
    published = [p for p in published_figures() if p.suite == suite]
    figure = json.loads(results_figure(results, published).to_json())
    drawn = "beside published" if published else "none published"
    caption = lesson("experiments")["chart"].format(beside=lesson("experiments")[f"chart, {drawn}"].strip())
    assert caption_problems(caption, figure) == []
    old = "Left: the share of blocks valid and unusable, by kind, for each condition beside the published runs."
    assert caption_problems(old, figure) == ([] if published else ["says published runs; the chart draws none"])


def test_measure_its_stacked_bars_reach_the_whole_and_every_kind_shows_its_colour():
    """Each condition's kinds stack to 100% of its blocks, and a hatched kind keeps its colour under the hatching
    (plotly's default pattern replaces the fill: white lines on nothing, a bar and a legend swatch that vanish)."""
    from ui.experiments import results_figure

    results = [
        fake_result("free", 13, {"bad_json": 1, "unknown_tool": 1}),
        fake_result("grammar", 12, {"cut_off": 1, "bad_arguments": 1}),
    ]
    figure = json.loads(results_figure(results, []).to_json())
    stacked = [t for t in figure["data"] if t.get("xaxis", "x") == "x"]
    for condition in ("free", "grammar"):
        total = sum(t["y"][t["x"].index(condition)] for t in stacked)
        assert total == pytest.approx(1.0), condition
    for trace in stacked:
        pattern = trace.get("marker", {}).get("pattern", {})
        if pattern.get("shape"):
            assert pattern.get("fillmode") == "overlay", trace["name"]
            assert trace["marker"]["color"] != pattern.get("fgcolor"), trace["name"]


# -- 3. pointing words whose target is on another screen when projected ----------------------------------------------
def pointing_problems(sections: list[tuple[str, bool]]) -> list[str]:
    """(text, whether the screen holds a step view) for each projected screen: "the step view above" needs one there."""
    return [
        f"section {n}: {s!r} points at a view on another screen"
        for n, (text, has_view) in enumerate(sections, start=1)
        for s in sentences(text)
        if re.search(r"view above", s) and not has_view
    ]


def projected_sections(page: str) -> list[tuple[str, bool]]:
    at = open_page(page, present="1", model="off")
    count = int(next(BAR.search(m.value) for m in at.markdown if BAR.search(m.value)).group(2))
    shown = []
    for k in range(1, count + 1):
        if k > 1:
            at.button(key="present_next").click().run()
            assert not at.exception, [e.value for e in at.exception]
        views = [e for e in at.get("bidi_component") if "view" in (e.key or e.proto.id)]
        shown.append((page_text(at), bool(views)))
    return shown


def test_lesson_6_projected_points_at_no_view_on_another_screen():
    sections = projected_sections(page_of("constrained-decoding"))
    assert sections[0][1] and not all(has for _, has in sections)  # the view opens the lesson, alone on its screen
    assert pointing_problems(sections) == []
    assert pointing_problems([("The step view above draws both for every masked step.", False)])


# -- 4. two figures for one thing, and nothing saying how they differ ----------------------------------------------------
def difference_problems(text: str, whole: int, part: int) -> list[str]:
    """Where a page shows `whole` beside a smaller `part` of the same thing, one sentence gives both and what is left."""
    figure = lambda n: rf"(?<![\d,]){n:,}(?![\d,])" if n >= 1000 else rf"(?<![\d,.]){n}(?![\d,])"  # noqa: E731
    for s in sentences(text):
        if all(re.search(figure(n), s) for n in (whole, part, whole - part)):
            return []
    return [f"{whole:,} and {part:,} with nothing giving the {whole - part:,} between them"]


def test_lesson_4_explains_a_bads_tokens_beside_the_ledgers_output_for_the_same_call():
    at = open_page(page_of("check-run-return"), model="off")
    shown = page_text(at)
    cost = measure_malformed_cost(load_scenario("missing-brace"), "native")
    written = cost.a_bad_output
    assert f"**a_bad** = {cost.a_bad}" in shown
    assert f"<td>{cost.bad_call}</td><td>{cost.c_bad}</td><td>{written}</td>" in shown  # the ledger's row
    # the rest is the template's markers around a re-sent turn, counted with the real tokenizer
    tok = load_tokenizer()
    assert cost.a_bad - written == len(tok.encode("<|im_start|>assistant\n")) + len(tok.encode("\n")) > 0
    terms = next(line for line in shown.split("\n") if "**a_bad**" in line)
    assert difference_problems(shown[shown.index(terms) :], cost.a_bad, written) == []
    old = f"- **a_bad** = {cost.a_bad}: the tokens its text adds to each later prompt"
    assert difference_problems(old, cost.a_bad, written)


def test_the_shipped_models_page_explains_its_rows_beside_the_tokenizers_tokens():
    at = open_page("app_pages/shipped_model.py", model="off")
    shown = page_text(at)
    rows = json.loads((BUILTIN_FOLDER / "config.json").read_text(encoding="utf-8"))["vocab_size"]
    vocab = load_tokenizer().vocab_size
    assert vocab == REAL_VOCAB < rows and rows % 128 == 0  # the caption's "a multiple of 128"
    assert f"{rows:,} rows" in shown and f"{vocab:,}" in shown
    assert difference_problems(shown, rows, vocab) == []
    assert difference_problems(
        f"the embedding of {rows:,} rows tied to the output layer; {vocab:,} tokens", rows, vocab
    )


# -- with no model, the words name the site's best option first ------------------------------------------------------
def no_model_problems(text: str) -> list[str]:
    """Words that tell a learner how to get a model must name the shipped model, before the tiny one."""
    flat = " ".join(text.split()).lower()
    if "tiny model" not in flat or "sidebar" not in flat:
        return []
    shipped = flat.find("shipped model")
    if shipped < 0:
        return ["names the tiny model and not the shipped one"]
    return [] if shipped < flat.find("tiny model") else ["names the tiny model before the shipped one"]


GET_A_MODEL = [
    ("constrained-decoding", "needs the model"),
    ("constrained-decoding", "side by side needs the model"),
    ("playground", "live needs the model"),
    ("when-not-to-call", "needs the model"),
]


@pytest.mark.parametrize(("page_id", "key"), GET_A_MODEL)
def test_with_no_model_the_words_name_the_shipped_model_first(page_id, key):
    assert no_model_problems(lesson(page_id)[key]) == []
    assert no_model_problems("load the model from the sidebar, or pick the tiny model (random weights)")


def test_every_lesson_that_says_how_to_get_a_model_names_the_shipped_one():
    from ui.words import LESSONS

    for path in sorted(LESSONS.glob("*.md")):
        if path.stem in ("setup", "engines"):  # the Set-up page's own choices, and a model server's case
            continue
        for key, text in lesson(path.stem).items():
            if "{model}" not in text:  # (filled by the page: read below as it is shown)
                assert no_model_problems(text) == [], (path.stem, key)
    # and pages with the model off show it so: a lesson's panel, and the Set-up page's line on the model chosen
    at = open_page(page_of("constrained-decoding"), model="off")
    assert any("the shipped model" in box.value for box in at.info)
    at = open_page(page_of("setup"), model="off")
    said = [box.value for box in at.info if "tiny" in box.value]
    assert said and all(no_model_problems(text) == [] for text in said), said


# -- a chart's labels are read at 4.5:1 at least (WCAG AA for text) ----------------------------------------------------
def contrast(a: str, b: str) -> float:
    """WCAG's contrast ratio of two #rrggbb colours."""

    def luminance(colour: str) -> float:
        channels = [int(colour.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
        r, g, b = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_lesson_5s_candidate_labels_and_every_charts_axes_are_dark_enough_to_read():
    import plotly.graph_objects as go

    from ui.charts import chart_layout
    from ui.palette import neutral

    assert contrast("#808495", "#ffffff") < 4.5  # the chart theme's grey, which the labels had
    figure = go.Figure(go.Bar(x=[0.9, 0.1], y=["<tool_call>", "The"], orientation="h"))
    chart_layout(figure, 200, yaxis={"type": "category", "tickfont": {"size": 13}})  # as lesson 5's key chart asks
    for axis in (figure.layout.xaxis, figure.layout.yaxis):
        assert contrast(axis.tickfont.color, neutral("paper")) >= 4.5
        assert contrast(axis.title.font.color, neutral("paper")) >= 4.5
    assert figure.layout.yaxis.tickfont.size == 13  # the page's size kept
    assert contrast(figure.data[0].outsidetextfont.color, neutral("paper")) >= 4.5  # a thin bar's figure, beside it
