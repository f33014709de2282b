"""Page tests (streamlit AppTest) for the Set-up page and what the lessons keep of operations.

Everything operational (shell commands, environment variables, the machine's speed, run_tests' slots and
modes, lesson packs) is on the Set-up page; every other page, and the sidebar, show one line of model
status and a link there. With no model, lesson 3's panel still shows what needs none: the call's tokens
and, at each, how many tokens the tools' grammar allows (the engine's walk, lesson 6's figure).
"""

from __future__ import annotations

import json

import pytest
from helpers import ROOT, open_page, page_text, view_data

from engine.core.tokenizer import IM_END, REAL_VOCAB, load_tokenizer
from engine.harness.loop import load_scenario
from engine.sandbox.report import describe_confinement
from engine.sandbox.slots import slot_status
from ui.numbers import format_allowed

SETUP = "app_pages/setup.py"
P3 = "app_pages/the_model_writes_a_call.py"
INDEX = json.loads((ROOT / "lessons" / "index.json").read_text(encoding="utf-8"))
# operations a learner should never read on a lesson page
FORBIDDEN = ("python -m engine", "QWEN_", "pip install", "GB/s", "slots busy", "ms a token")
# the shipped model's provenance page keeps its record whole: the exact command that trained it
KEEPS_ITS_RECORD = {"setup", "shipped-model"}
PAGES = [pytest.param(e["page"], id=e["id"]) for e in INDEX if e["id"] not in KEEPS_ITS_RECORD]
# the tests' default (Qwen3-1.7B named and absent), the model switched off, the site's own default model, the tiny model
MODELS = [
    pytest.param({}, id="default"),
    pytest.param({"model": "off"}, id="off"),
    pytest.param({"model": "builtin"}, id="builtin"),
    pytest.param({"model": "tiny"}, id="tiny"),
]


def all_text(at) -> str:
    """Everything a page says, the sidebar's too: its text, labels, links, metrics, tooltips and views' data."""
    parts = [page_text(at)]
    parts += [e.label for e in at.expander] + [m.label + " " + m.value for m in at.metric]
    parts += [link.proto.label for link in at.get("page_link")] + [h.proto.body for h in at.get("html")]
    parts += [c.proto.help for c in at.caption]
    for element in at.get("bidi_component"):
        proto = element.proto
        parts.append(proto.mixed.json if proto.HasField("mixed") else proto.json)
    return "\n".join(parts)


@pytest.mark.slow
@pytest.mark.parametrize("query", MODELS)
@pytest.mark.parametrize("page", PAGES)
def test_no_page_but_set_up_shows_a_command_a_setting_a_speed_or_a_slot(page, query):
    at = open_page(page, timeout=120, **query)
    text = all_text(at)
    assert not [word for word in FORBIDDEN if word in text], f"{page} ({query}) shows operations: they belong on Set-up"
    # the sidebar keeps one line of model status and the link to Set-up
    assert any(
        link.proto.page.endswith("setup") or "Set-up" in link.proto.label for link in at.sidebar.get("page_link")
    )


@pytest.mark.parametrize("page", PAGES)
def test_with_a_lesson_pack_no_page_but_set_up_shows_operations(page, tiny_pack, monkeypatch):
    monkeypatch.setenv("QWEN_PACK", str(tiny_pack[0]))
    monkeypatch.setenv("QWEN_ALLOW_RANDOM_PACKS", "1")
    text = all_text(open_page(page, timeout=120, model="off"))
    assert not [word for word in FORBIDDEN if word in text], f"{page} (a pack) shows operations: they belong on Set-up"


def test_set_up_shows_the_commands_the_speed_the_sandbox_and_the_slots():
    at = open_page(SETUP, timeout=120)
    text = all_text(at)
    assert at.title[0].value == "Set-up"
    assert "python -m engine download --model Qwen/Qwen3-1.7B" in text and "QWEN_MODEL=/path/to/folder" in text
    assert "pip install -r requirements.txt" in text and "python -m engine prepare" in text
    for variable in ("QWEN_MODEL", "QWEN_ENGINE_URL", "QWEN_PACK", "QWEN_SANDBOX_SLOTS"):
        assert f"`{variable}`" in text
    report = describe_confinement()
    assert f"**Mode: {report.mode}**" in text and report.summary in text
    assert slot_status().words() in text  # "0 of 4 run_tests slots busy."
    assert "Upload a lesson pack" in [e.label for e in at.expander]
    assert any(link.proto.label.startswith("The shipped model") for link in at.get("page_link"))


def test_home_keeps_one_line_of_model_status_and_links_to_set_up():
    at = open_page()
    assert "No model is loaded" in "\n".join(i.value for i in at.info)
    assert "Set-up" in [link.proto.label for link in at.get("page_link")]  # the lesson list's link
    off = open_page(model="off")
    assert "The model is switched off in the sidebar" in "\n".join(i.value for i in off.info)


@pytest.mark.parametrize("query", [pytest.param({}, id="default"), pytest.param({"model": "off"}, id="off")])
def test_with_no_model_lesson_3_shows_the_calls_tokens_and_the_grammars_allowed_counts(query):
    from engine.constrain.masks import walk

    at = open_page(P3, timeout=120, **query)
    scenario = load_scenario("strawberry")
    call = scenario.turns["native"][0].text
    tok = load_tokenizer()
    walked = walk(scenario.tools, call + tok.token_text(IM_END), "auto")
    steps = view_data(at, "the_model_writes_a_call_view")["steps"]
    # the call's tokens from the real tokenizer, its closing <|im_end|> included
    assert [s["caption"] for s in steps] == [f"id {i}" for i in [*tok.encode(call), IM_END]]
    assert [s["caption"] for s in steps] == [f"id {w.id}" for w in walked]
    # under each token, the engine's count; the probability marked as needing a model
    assert [s["sub"] for s in steps] == [format_allowed(w.allowed, REAL_VOCAB) for w in walked]
    for n, (step, w) in enumerate(zip(steps, walked, strict=True), start=1):
        assert [
            f"Allowed by the tools' grammar before token {n}",
            f"{format_allowed(w.allowed, REAL_VOCAB)} of {REAL_VOCAB:,}",
        ] in step["facts"]
        assert ["Probability", "needs a model"] in step["facts"] and "Its probability" not in dict(step["facts"])
    assert min(w.allowed for w in walked if w.allowed is not None) == 1  # a fixed token: the grammar leaves one
    # the one line that says why, linking to Set-up instead of a shell command
    assert any(link.proto.label == "Load a model: Set-up" for link in at.main.get("page_link"))
    assert "python -m engine" not in page_text(at)


def test_a_folder_model_is_not_told_to_download_itself_but_how_to_name_another(tmp_path, monkeypatch):
    folder = tmp_path / "my-qwen3"
    folder.mkdir()
    monkeypatch.setenv("QWEN_MODEL", str(folder))
    text = all_text(open_page(SETUP, timeout=120))
    assert f"python -m engine download --model {folder}" not in text
    assert f"{folder} is a folder on this server. To run another model, set `QWEN_MODEL`" in text
    assert "python -m engine download --model Qwen/Qwen3-1.7B" in text
