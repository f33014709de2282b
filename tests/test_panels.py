"""The panel registry and the choice of a panel's source: every model panel defined once, prepare records
exactly the registry, a pack run recorded with other settings is refused with a sentence saying what to do,
and one function picks live model, pack or nothing for every kind of panel."""

from __future__ import annotations

import ast
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from engine.core.generation import ModelInfo
from engine.errors import BadInput
from engine.packs.pack import RUN_ID
from engine.packs.panel_source import choose_source, describe_difference
from engine.packs.reader import read_pack
from engine.teaching.panels import KINDS, find_panel, list_panels

ROOT = Path(__file__).resolve().parent.parent
INDEX = json.loads((ROOT / "lessons" / "index.json").read_text(encoding="utf-8"))


class Loaded:
    """What choose_source reads of a loaded model: its info."""

    def __init__(self, random_weights: bool):
        self.info = ModelInfo(
            "tiny" if random_weights else "Qwen/Qwen3-1.7B",
            "built in memory",
            None,
            None,
            "float32",
            "cpu",
            1,
            random_weights,
        )


def page_calls(path: Path) -> list[str]:
    """The literal first arguments of each find_panel(...) call in a page (its lesson id, through ID where a page names it)
    and in the scenes it imports from ui/ (a page's panels may be drawn by a ui module, ui/first_token_panel.py)."""
    calls = module_calls(path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ui."):
            scene = ROOT / (node.module.replace(".", "/") + ".py")
            if scene.is_file():
                calls += module_calls(scene)
    return calls


def module_calls(path: Path) -> list[str]:
    """The lesson ids of one file's find_panel(...) calls, written out or through a module-level name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "find_panel" and node.args:
            first = node.args[0]
            lesson = first.value if isinstance(first, ast.Constant) else names.get(getattr(first, "id", ""))
            if lesson is not None:  # find_panel(panel_id): a panel the page found by its parts before
                calls.append(lesson)
    return calls


# -- the registry ------------------------------------------------------------------------------------
def test_every_panel_has_a_stable_id_of_its_lesson_a_known_kind_and_settings():
    lessons = {entry["id"] for entry in INDEX}
    panels = list_panels()
    assert len({p.id for p in panels}) == len(panels)
    for panel in panels:
        assert panel.lesson in lessons and panel.id.startswith(panel.lesson + ".")
        assert RUN_ID.match(panel.id) and not any(ch.isdigit() for ch in panel.id.split(".")[0])
        assert panel.kind in KINDS
        assert (panel.generation is None) == (panel.kind in ("first_token", "masks"))
        assert panel.recorded_settings(False) and panel.recorded_settings(True)


def test_the_registry_covers_every_model_panel_the_pages_show_and_no_page_writes_its_own_settings():
    pages = {entry["id"]: ROOT / entry["page"] for entry in INDEX}
    asked = {lesson for page in pages.values() for lesson in page_calls(page)}
    assert asked == {p.lesson for p in list_panels()}
    for lesson, page in pages.items():
        source = page.read_text(encoding="utf-8")
        # a page that runs a model reads its settings from the registry
        assert "GenerationSettings(" not in source, f"{page.name} writes its own generation settings"
        if "generate_turn" in source or "first_token" in source or "side_by_side" in source or "LiveModel" in source:
            assert lesson in asked, f"{page.name} runs a model without a panel"


def test_lesson_3_asks_fewer_tokens_of_random_weights_and_a_panel_is_found_by_its_parts():
    call = find_panel("the-model-writes-a-call", "call", "react")
    assert call.id == "the-model-writes-a-call.call.react" and call.style == "react"
    assert (call.generation_for(False).max_new_tokens, call.generation_for(True).max_new_tokens) == (80, 40)
    assert call.recorded_settings(True)["max_new_tokens"] == 40 and call.recorded_settings(True)["style"] == "react"
    with pytest.raises(
        BadInput, match="the panels of 'the-model-writes-a-call' are: the-model-writes-a-call.call.native"
    ):
        find_panel("the-model-writes-a-call", "call", "json")


def test_the_mask_panels_prompt_is_the_question_then_the_whole_reply():
    from engine.core.prompt import render
    from engine.core.tokenizer import load_tokenizer

    tok = load_tokenizer()
    mask = find_panel("constrained-decoding", "mask", "call", "required")
    question = render(mask.request, tok).ids
    assert mask.prompt_ids(tok) == question + tok.encode(mask.reply) and len(mask.prompt_ids(tok)) > len(question)


# -- prepare records the registry --------------------------------------------------------------------
def test_prepare_plans_exactly_the_registrys_recorded_panels_with_their_settings(tiny_engine):
    from engine.packs.prepare import plan_runs

    planned = plan_runs(tiny_engine)
    packed = [p for p in list_panels() if p.packed]
    assert [(r.id, r.lesson, r.kind, r.settings) for r in planned] == [
        (p.id, p.lesson, p.kind, p.recorded_settings(True)) for p in packed
    ]
    assert [r.prompt_ids for r in planned] == [p.prompt_ids(tiny_engine.tokenizer) for p in packed]
    assert [p.id for p in list_panels() if not p.packed] == ["playground.episode.react"]


def test_the_tiny_pack_holds_one_run_per_recorded_panel(tiny_pack):
    pack = read_pack(tiny_pack[0], allow_random=True)
    assert list(pack.runs) == [p.id for p in list_panels() if p.packed]
    for panel in list_panels():
        if panel.packed:
            assert pack.run(panel.id).settings == panel.recorded_settings(True)


# -- the source chooser: live / random / pack / none, for every kind of panel ---------------------------------
ONE_OF_EACH_KIND = [next(p for p in list_panels() if p.kind == kind) for kind in KINDS]


def _with_manifest(tiny_pack, folder: Path, change) -> Path:
    """A copy of the tiny pack whose manifest entries were changed by `change(entry)`."""
    shutil.copytree(tiny_pack[0], folder)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["runs"]:
        change(entry)
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


@pytest.mark.parametrize("panel", ONE_OF_EACH_KIND, ids=lambda p: p.kind)
def test_a_loaded_model_comes_first_and_says_whether_its_weights_are_random(panel, tiny_pack):
    pack = read_pack(tiny_pack[0], allow_random=True)
    for random_weights, kind in ((False, "live"), (True, "random")):
        engine = Loaded(random_weights)
        chosen = choose_source(panel, engine, pack)
        assert (chosen.kind, chosen.engine, chosen.run, chosen.why, chosen.computes) == (kind, engine, None, "", True)
        assert chosen.label == engine.info.label()


@pytest.mark.parametrize("panel", ONE_OF_EACH_KIND, ids=lambda p: p.kind)
def test_without_a_model_the_packs_own_run_is_shown_labelled_with_the_pack(panel, tiny_pack):
    pack = read_pack(tiny_pack[0], allow_random=True)
    chosen = choose_source(panel, None, pack)
    assert (chosen.kind, chosen.run.id, chosen.why, chosen.computes) == ("pack", panel.id, "", False)
    assert chosen.label == pack.label() and chosen.label.startswith("tiny (fp32, cpu), recorded 20")


@pytest.mark.parametrize("panel", ONE_OF_EACH_KIND, ids=lambda p: p.kind)
def test_without_a_model_or_a_pack_nothing_is_shown_and_the_reason_says_how_to_get_one(panel):
    chosen = choose_source(panel, None, None)
    assert (chosen.kind, chosen.run, chosen.engine, chosen.why) == ("none", None, None, "no-source")
    assert "load the model in the sidebar" in chosen.reason and "python -m engine prepare" in chosen.reason


@pytest.mark.parametrize("panel", ONE_OF_EACH_KIND, ids=lambda p: p.kind)
def test_a_pack_of_an_older_version_without_the_panels_id_is_refused(panel, tiny_pack):
    # a pack recorded before the registry named its runs "lesson3-native" and so on
    pack = read_pack(tiny_pack[0], allow_random=True)
    old = replace(pack, runs={f"old-{n}": run for n, run in enumerate(pack.runs.values())})
    chosen = choose_source(panel, None, old)
    assert (chosen.kind, chosen.why) == ("none", "not-in-pack")
    assert f"holds no recording for this panel ({panel.id})" in chosen.reason
    assert "older version" in chosen.reason and "python -m engine prepare" in chosen.reason


@pytest.mark.parametrize("panel", ONE_OF_EACH_KIND, ids=lambda p: p.kind)
def test_a_pack_run_recorded_with_other_settings_is_refused_with_what_differs(panel, tiny_pack, tmp_path):
    def spoil(entry):
        if entry["id"] == panel.id:
            entry["settings"] = {**entry["settings"], "top_k": 3}

    pack = read_pack(_with_manifest(tiny_pack, tmp_path / "other", spoil), allow_random=True)
    chosen = choose_source(panel, None, pack)
    assert (chosen.kind, chosen.run, chosen.why) == ("none", None, "other-settings")
    assert f"recorded with top_k 3; the panel now uses top_k {panel.recorded_settings(True)['top_k']}" in chosen.reason
    assert "record the pack again with `python -m engine prepare" in chosen.reason


def test_the_refusal_names_lesson_3s_token_limit(tiny_pack, tmp_path):
    panel = find_panel("the-model-writes-a-call", "call", "native")

    def spoil(entry):
        if entry["id"] == panel.id:
            entry["settings"]["max_new_tokens"] = 80  # as if recorded with real weights' limit

    chosen = choose_source(panel, None, read_pack(_with_manifest(tiny_pack, tmp_path / "p", spoil), allow_random=True))
    assert "recorded with max_new_tokens 80; the panel now uses max_new_tokens 40" in chosen.reason


@pytest.mark.parametrize("panel", [p for p in ONE_OF_EACH_KIND if p.kind != "episode"], ids=lambda p: p.kind)
def test_a_pack_run_recorded_for_another_prompt_is_refused(panel, tiny_pack, tmp_path):
    def spoil(entry):
        if entry["id"] == panel.id:
            entry["prompt_sha256"] = "0" * 64

    chosen = choose_source(panel, None, read_pack(_with_manifest(tiny_pack, tmp_path / "q", spoil), allow_random=True))
    assert (chosen.kind, chosen.why) == ("none", "other-prompt")
    assert f"recorded for a different prompt ({panel.shows})" in chosen.reason


def test_a_panel_packs_do_not_record_says_so(tiny_pack):
    chosen = choose_source(
        find_panel("playground", "episode", "react"), None, read_pack(tiny_pack[0], allow_random=True)
    )
    assert (chosen.kind, chosen.why) == (
        "none",
        "not-in-pack",
    ) and "Lesson packs do not record this panel" in chosen.reason


@pytest.mark.parametrize(
    "recorded, wanted, said",
    [
        ({"top_k": 8}, {"top_k": 8}, None),
        (
            {"max_new_tokens": 80, "top_k": 8},
            {"max_new_tokens": 40, "top_k": 8},
            "recorded with max_new_tokens 80; the panel now uses max_new_tokens 40",
        ),
        ({}, {"max_turns": 3}, "recorded with max_turns (not recorded); the panel now uses max_turns 3"),
        (
            {"tools": True, "extra": 1},
            {"tools": False},
            "recorded with tools true, extra 1; the panel now uses tools false, extra (not recorded)",
        ),
    ],
)
def test_describe_difference_names_each_setting_that_differs(recorded, wanted, said):
    assert describe_difference(recorded, wanted) == said
