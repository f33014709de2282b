"""Sentences that state a fact about their own page agree with the data the page draws.

Each quiz answer, caption and line of text that says which check fails, what error a cut-off call gets,
how many lessons there are or how many tokens a call has is rendered here and read back against the
engine's data and the page's own table or view, in both styles, with and without a lesson pack. Each
reading is a small function that returns what is wrong with a sentence, and each is also shown a
deliberately wrong sentence, so a check that could never fail would be caught.
"""

from __future__ import annotations

import html
import re

import pytest
from helpers import open_page, page_of, view_data, view_step

from engine.core.call_formats import call_tokens, lesson_format_names, parse_turn
from engine.core.parse import CHECK_TITLES
from engine.core.tokenizer import IM_END, TOOL_CALL, TOOL_CALL_END, load_tokenizer
from engine.harness.loop import list_gallery, load_scenario
from engine.teaching.quiz import compute_quiz_values, word_pieces
from ui.numbers import format_count
from ui.words import LESSONS, NUMBERED, lesson, lesson_index

P3, P4, P6, P8 = map(
    page_of, ("the-model-writes-a-call", "check-run-return", "constrained-decoding", "other-model-families")
)
STYLES = lesson_format_names()


@pytest.fixture(params=["no pack", "pack"], ids=["nopack", "withpack"])
def condition(request, monkeypatch):
    """The site with the model off, without a lesson pack and with the tiny one (QWEN_PACK, random weights admitted)."""
    if request.param == "pack":
        folder = request.getfixturevalue("tiny_pack")[0]
        monkeypatch.setenv("QWEN_PACK", str(folder))
        monkeypatch.setenv("QWEN_ALLOW_RANDOM_PACKS", "1")
    else:
        monkeypatch.delenv("QWEN_PACK", raising=False)
    return request.param


def answer(at, n: int) -> str:
    """The text behind a page's "Answer n" expander."""
    box = next(e for e in at.expander if e.label == f"Answer {n}")
    return "\n".join(m.value for m in box.markdown)


def question(at, n: int) -> str:
    return next(m.value for m in at.markdown if m.value.startswith(f"**{n}.** "))


def checks_table(step_html: str) -> list[tuple[str, str]]:
    """(verdict, check title) for each row of a checks table the step view shows: pass, fail or skip."""
    rows = re.findall(r'<tr class="(pass|fail|skip)"><td class="v">[^<]*</td><td>(.*?)</td>', step_html)
    return [(verdict, html.unescape(title)) for verdict, title in rows]


# -- lesson 4: which check fails, and what comes back ------------------------------------------------------
def failed_check_problems(text: str, table: list[tuple[str, str]], error: str) -> list[str]:
    """What the answer to "which check fails" gets wrong against the page's checks table."""
    problems = []
    failed = next(n for n, (verdict, _) in enumerate(table, start=1) if verdict == "fail")
    said = re.search(r"Check \*\*(\d+)\*\* of (\d+), \*(.+?)\*", text)
    if said is None:
        return [f"no check named in {text!r}"]
    if int(said.group(1)) != failed:
        problems.append(f"says check {said.group(1)} fails; the table fails check {failed}")
    if int(said.group(2)) != len(table):
        problems.append(f"says {said.group(2)} checks; the table has {len(table)}")
    if said.group(3) != table[failed - 1][1]:
        problems.append(f"names {said.group(3)!r}; the table's failed check is {table[failed - 1][1]!r}")
    if any(f"*{title}*" not in text for verdict, title in table[: failed - 1] if verdict == "pass"):
        problems.append("does not name the checks that passed before it")
    if f"`{error}`" not in text:
        problems.append(f"does not quote the error {error!r}")
    return problems


@pytest.mark.parametrize("style", STYLES)
def test_lesson_4_answer_1_names_the_check_its_table_fails(style, condition):
    at = open_page(P4, model="off", style=style)
    data = view_data(at, "check_run_return_view")
    table = checks_table(data["steps"][data["start"] - 1]["html"])  # the page opens at the broken call
    scenario = load_scenario("missing-brace")
    verdict = parse_turn(scenario.turns[style][scenario.malformed_turn].text, scenario.tools, style)
    # the table is the parser's verdict: its first failed check, and every check before it passed
    assert table == [
        ({True: "pass", False: "fail", None: "skip"}[c.passed], CHECK_TITLES[c.name]) for c in verdict.blocks[0].checks
    ]
    assert table[0][0] == "pass"  # so "the first one" would be wrong
    text = answer(at, 1)
    assert failed_check_problems(text, table, verdict.errors[0].error) == []
    # the sentence it replaced, and a wrong number, are both caught
    old = "The first one: the text is not valid JSON, so the name and arguments are never checked."
    assert failed_check_problems(old, table, verdict.errors[0].error)
    assert failed_check_problems(text.replace("Check **2**", "Check **1**", 1), table, verdict.errors[0].error)


# -- lesson 6: what a cut-off call gets back ------------------------------------------------------------------
def cut_off_problems(text: str, shown_error: str) -> list[str]:
    problems = []
    if f"`{shown_error}`" not in text:
        problems.append(f"does not quote the page's error {shown_error!r}")
    if "JSON check" in text and "not valid JSON" not in shown_error:
        problems.append("says the JSON check fails; the page's error is another check's")
    return problems


@pytest.mark.parametrize("style", STYLES)
def test_lesson_6_answer_3_quotes_the_error_the_page_shows_for_its_cut_off_call(style, condition):
    at = open_page(P6, model="off", style=style)
    shown = next(c.value for c in at.code if c.value.startswith("error:") and "cut off" in c.value)
    cut = load_scenario("cut-off")
    verdict = parse_turn(cut.turns["native"][cut.malformed_turn].text, cut.tools, "native")
    assert shown == verdict.errors[0].error
    failed = next(c for c in verdict.blocks[0].checks if c.passed is False)
    text = answer(at, 3)
    assert cut_off_problems(text, shown) == [] and f"*{CHECK_TITLES[failed.name]}*" in text
    assert cut_off_problems("Such a call fails the JSON check like any other.", shown)


# -- Home: how many lessons --------------------------------------------------------------------------------
def test_home_counts_the_lessons_it_lists(condition):
    at = open_page("app_pages/home.py", model="off")
    numbered = [e for e in lesson_index() if e["section"] == NUMBERED]
    said = re.search(r"has (\S+) short lessons", next(m.value for m in at.markdown if "short lessons" in m.value))
    assert said is not None and said.group(1) == format_count(len(numbered))
    # the gallery's line says how many cases the gallery holds
    assert any(f"{len(list_gallery())} failures" in c.value for c in at.caption)
    assert "Seven" not in lesson("home")["the lessons"]  # no count typed into the text


# -- lessons 3 and 8: the same call's tokens, and what they count ---------------------------------------------
@pytest.mark.parametrize("style", STYLES)
def test_lesson_3_question_2_counts_the_call_it_quotes(style, condition):
    at = open_page(P3, model="off", style=style)
    values = compute_quiz_values("the-model-writes-a-call", style)
    call = load_scenario("strawberry").turns[style][0].text
    text = question(at, 2)
    # the question quotes the call it counts, so it holds whatever the page shows (a pack's call, a model's)
    assert call in text and "shown above" not in text
    counted = len(load_tokenizer().encode(call))
    flat = " ".join(text.split())
    assert f"is {counted} tokens long" in flat and f"makes {counted + 1}" in flat
    assert (values["call_only"], values["call_tokens"]) == (counted, counted + 1)
    if condition == "no pack":
        # with no model the step-through shows this very call, its <|im_end|> included
        where, _ = view_step(at, "the_model_writes_a_call_view")
        assert where == f"Token 1 of {counted + 1}"
        assert view_data(at, "the_model_writes_a_call_view")["steps"][-1]["chip"] == load_tokenizer().token_text(IM_END)


def test_lesson_8_counts_qwen3s_call_as_lesson_3_does_less_its_im_end(condition):
    at = open_page(P8, model="off")
    _, ids, _ = call_tokens("qwen3", "count_letter", {"word": "strawberry", "letter": "r"})
    lesson_3 = compute_quiz_values("the-model-writes-a-call", "native")
    assert len(ids) == lesson_3["call_only"] == lesson_3["call_tokens"] - 1
    said = " ".join(next(m.value for m in at.markdown if "less the `<|im_end|>`" in m.value).split())
    assert f"Qwen3's {len(ids)} tokens here are lesson 3's {lesson_3['call_tokens']}" in said
    assert any(c.value.startswith(f"{len(ids)} tokens · ") for c in at.caption)


@pytest.mark.parametrize("style", STYLES)
def test_lesson_3_says_how_strawberry_is_cut_inside_the_call(style):
    at = open_page(P3, model="off", style=style)
    chips = [s["chip"] for s in view_data(at, "the_model_writes_a_call_view")["steps"]]
    tok = load_tokenizer()
    spelled = word_pieces(
        [tok.token_text(i) for i in tok.encode(load_scenario("strawberry").turns[style][0].text)], "strawberry"
    )
    assert spelled and len(spelled) > len(tok.encode(" strawberry")) == 1  # one token with its space, more without
    line = next(c.value for c in at.caption if "comes after a quote" in c.value)
    assert f"**{len(spelled)} tokens**" in line and " | ".join(f"`{p}`" for p in spelled) in line
    assert "".join(spelled) == "strawberry" and all(p in chips for p in spelled)
    assert word_pieces(["␣str", "aw"], "strawberry") is None  # a run that does not spell the word is not taken


def test_tool_call_is_called_what_the_tokenizer_makes_it_everywhere():
    tok = load_tokenizer()
    # an added token (one id, never split) that Qwen3's tokenizer files do not flag special, unlike <|im_end|>
    assert tok.encode("<tool_call>") == [TOOL_CALL] and tok.encode("</tool_call>") == [TOOL_CALL_END]
    assert not tok.is_special(TOOL_CALL) and not tok.is_special(TOOL_CALL_END) and tok.is_special(IM_END)
    texts = {
        name: "\n".join(lesson(name).values())
        for name in ("the-model-writes-a-call", "constrained-decoding", "other-model-families", "gallery")
    }
    from pathlib import Path

    texts["glossary"] = (Path(__file__).resolve().parent.parent / "lessons" / "glossary.json").read_text(
        encoding="utf-8"
    )
    wrong = re.compile(
        r"special tokens?,? `?</?tool_call>|`?</?tool_call>`?,? (?:are|is) (?:single )?special|single special token"
    )
    for name, text in texts.items():
        assert not wrong.search(text), f"{name} calls <tool_call> a special token: {wrong.search(text).group()!r}"
    for name in ("the-model-writes-a-call", "constrained-decoding", "other-model-families"):
        assert "do not\nflag" in texts[name] or "do not flag" in texts[name], name
    assert wrong.search("`<tool_call>` and `</tool_call>` are single special tokens")  # the old wording is caught


# -- pointing words ------------------------------------------------------------------------------------------
def test_lesson_2_points_at_the_prompt_where_it_is(condition):
    at = open_page("app_pages/tools_as_schemas.py", model="off")
    shown = [m.value for m in at.markdown]
    prompt_at = next(n for n, v in enumerate(shown) if v.startswith('<div class="prompt-view">'))
    parts_at = next(n for n, v in enumerate(shown) if "for the definitions themselves" in v)
    assert prompt_at < parts_at  # the prompt comes first on the page
    assert (
        "at the start of this lesson" in shown[parts_at]
        and "below" not in shown[parts_at]
        and "orange" not in shown[parts_at]
    )


def test_the_gallerys_arrow_keys_are_said_to_step_tokens():
    at = open_page("app_pages/gallery.py", model="off")
    words = lesson("gallery")["pick a case"]
    assert "case to case" not in words and "token by token" in words
    # the keys belong to the grammar's walk: one step per token of the turn
    data = next(view_data(at, e.key) for e in at.get("bidi_component") if e.key and e.key.startswith("gallery_view_"))
    assert data["keys"] is True and data["unit"].lower().startswith("token")


# -- one number format -----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_counts_print_with_one_format():
    at = open_page("app_pages/tools_as_schemas.py", model="off", calls="5")
    metrics = {m.label: m.value for m in at.metric}
    total = compute_quiz_values("tools-as-schemas")["total"]
    assert metrics["Native: tools cost over 5 calls"] == format_count(5 * total) == f"{5 * total:,}"
    assert format_count(1205) == "1,205" and format_count(12) == "12"
    # every metric on the lessons' pages groups its digits
    for entry in lesson_index():
        if entry["section"] != NUMBERED:
            continue
        for metric in open_page(entry["page"], model="off").metric:
            assert not re.search(r"(?<![\d,.])\d{4,}", metric.value), f"{entry['id']}: {metric.label} = {metric.value}"


# -- a headline is one projected line: at 1024 px a longer one wraps, and a widget under it overlaps its second line
HEADLINE_CHARACTERS = 80


HEADLINED = sorted(p.stem for p in LESSONS.glob("*.md") if "\n## Headline\n" in p.read_text(encoding="utf-8"))


def test_the_lessons_have_headlines():
    assert len(HEADLINED) >= 9, HEADLINED


@pytest.mark.parametrize("page_id", HEADLINED)
def test_every_headline_fits_one_projected_line(page_id):
    stated = lesson(page_id)["headline"]
    assert "\n" not in stated.strip() and len(stated) <= HEADLINE_CHARACTERS, (
        f"{page_id}'s headline is {len(stated)} characters; one line at 1024 px holds about {HEADLINE_CHARACTERS}: "
        "say its one idea shorter"
    )
