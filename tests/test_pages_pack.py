"""Page tests (streamlit AppTest) with a lesson pack and the model off: every model panel shows the
recorded figures at once, labelled with the pack's model and date; a run recorded for another prompt
is not shown; a random-weights pack needs QWEN_ALLOW_RANDOM_PACKS=1; an upload is the uploader's alone.

The pack is the tiny model's (fixture `tiny_pack`), so QWEN_ALLOW_RANDOM_PACKS=1 is set where it is used.
"""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import open_page, page_of, view_data, view_step, zipped

from engine.packs.reader import read_pack
from ui.numbers import format_percent

P1, P3, P5, P6, PG = map(
    page_of, ("why-call-a-tool", "the-model-writes-a-call", "when-not-to-call", "constrained-decoding", "playground")
)
LABEL = "Recorded with tiny (fp32, cpu), recorded 20"


def shows_probability(at) -> bool:
    """Whether lesson 3's step view shows a probability for its first token (a model or a recording made the call)."""
    if not any(e.key == "the_model_writes_a_call_view" for e in at.get("bidi_component")):
        return False
    return "Its probability" in dict(view_step(at, "the_model_writes_a_call_view")[1]["facts"])


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def infos(at) -> str:
    return "\n".join(i.value for i in at.info)


def warnings(at) -> str:
    return "\n".join(w.value for w in at.warning)


@pytest.fixture
def pack(tiny_pack, monkeypatch):
    """The tiny pack as the server's pack (QWEN_PACK), random weights admitted."""
    monkeypatch.setenv("QWEN_PACK", str(tiny_pack[0]))
    monkeypatch.setenv("QWEN_ALLOW_RANDOM_PACKS", "1")
    return read_pack(tiny_pack[0], allow_random=True)


def test_lesson_3_shows_each_tokens_recorded_probability_labelled_as_recorded(pack):
    at = open_page(P3, model="off")
    steps = pack.run("the-model-writes-a-call.call.native").generation().steps
    assert LABEL in infos(at) and "random weights" in infos(at)
    where, first = view_step(at, "the_model_writes_a_call_view")
    assert dict(first["facts"])["Its probability"] == format_percent(steps[0].p)
    assert where == f"Token 1 of {len(steps)}"  # tokens count from 1, as on lessons 4 and 6
    second = view_data(at, "the_model_writes_a_call_view")["steps"][1]  # every recorded step is sent at once
    assert dict(second["facts"])["Its probability"] == format_percent(steps[1].p)
    assert [b["p"] for b in second["bars"][0]["rows"]] == [a.p for a in steps[1].top]


def test_lesson_3_in_react_shows_the_react_recording(pack):
    at = open_page(P3, model="off", style="react")
    steps = pack.run("the-model-writes-a-call.call.react").generation().steps
    assert dict(view_step(at, "the_model_writes_a_call_view")[1]["facts"])["Its probability"] == format_percent(
        steps[0].p
    )


def test_lesson_5_shows_the_recorded_p_tool_call_for_both_questions(pack):
    at = open_page(P5, model="off")
    shown = [m.value for m in at.metric if m.label == "P(<tool_call>) as the first token"]
    assert shown == [
        format_percent(pack.run(f"when-not-to-call.first-token.{q}").data["p_tool_call"])
        for q in ("strawberry", "france")
    ]
    assert infos(at).count(LABEL) == 1  # one line above both questions says the pack recorded them


def test_lesson_1_shows_both_recorded_runs(pack):
    at = open_page(P1, model="off")
    bare = pack.run("why-call-a-tool.no-tools").data
    assert LABEL in infos(at)
    assert any(c.value == f"{len(bare['steps'])} tokens, finish: {bare['finish']}" for c in at.caption)
    turns = pack.run("why-call-a-tool.with-tools.native").data["turns"]
    # each recorded turn is drawn as the live view draws it: literally, a long run of blank lines as one count
    from ui.literal import reply_html

    shown = [m.value for m in at.markdown]
    assert all(reply_html(turn["text"]) in shown for turn in turns)
    assert at.code[0].value.startswith("<tool_call>")  # the scripted run's code blocks come after


def test_lesson_6_shows_the_recorded_mask_before_and_after_and_the_two_decodes(pack):
    at = open_page(P6, model="off", step="3", tool_choice="required")
    row = pack.run("constrained-decoding.mask.call.required").data["steps"][2]
    shown = view_step(at, "constrained_decoding_view")[1]
    assert dict(shown["facts"])["Probability the model put on forbidden tokens"] == format_percent(
        row["forbidden_mass"]
    )
    before, after = shown["bars"]
    assert [r["p"] for r in before["rows"]] == [r["p"] for r in row["top_before"]]
    assert [r["p"] for r in after["rows"]] == [r["p"] for r in row["top_after"]]
    pair = pack.run("constrained-decoding.side-by-side.required").data
    # both recorded replies, drawn literally (the pack's label is above them, not on each)
    from ui.literal import reply_html

    shown = [m.value for m in at.markdown]
    assert (
        reply_html(pair["unconstrained"]["text"], None) in shown
        and reply_html(pair["constrained"]["text"], None) in shown
    )


def test_the_playground_replays_the_recorded_episode_at_once(pack):
    at = open_page(PG, model="off", mode="live")
    turns = pack.run("playground.episode.native").data["turns"]
    assert LABEL in infos(at)
    assert metrics(at)["Calls"] == str(len(turns))
    assert metrics(at)["Output tokens"] == f"{sum(t['output_tokens'] for t in turns):,}"


def test_a_random_weights_pack_is_refused_without_the_switch(tiny_pack, monkeypatch):
    monkeypatch.setenv("QWEN_PACK", str(tiny_pack[0]))
    monkeypatch.delenv("QWEN_ALLOW_RANDOM_PACKS", raising=False)
    at = open_page(P3, model="off")
    assert not shows_probability(at)
    at.switch_page("app_pages/setup.py").run()  # the pack in use, and why not, is the Set-up page's
    captions = "\n".join(c.value for c in at.caption)
    assert "cannot be used" in captions and "random weights" in captions


def test_a_run_recorded_for_another_prompt_is_not_shown_as_current(tiny_pack, tmp_path, monkeypatch):
    copy = tmp_path / "stale"
    shutil.copytree(tiny_pack[0], copy)
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["runs"]:
        if entry["id"] in ("the-model-writes-a-call.call.native", "when-not-to-call.first-token.france"):
            entry["prompt_sha256"] = "0" * 64  # as if the lesson's prompt had changed since
    (copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    monkeypatch.setenv("QWEN_PACK", str(copy))
    monkeypatch.setenv("QWEN_ALLOW_RANDOM_PACKS", "1")
    at = open_page(P3, model="off")
    assert "recorded for a different prompt" in warnings(at) and not shows_probability(at)
    at = open_page(P5, model="off")
    assert "recorded for a different prompt" in warnings(at)
    assert len([m for m in at.metric if m.label == "P(<tool_call>) as the first token"]) == 1  # strawberry only


def test_a_run_recorded_with_other_settings_is_refused_on_its_panel_with_what_to_do(tiny_pack, tmp_path, monkeypatch):
    copy = tmp_path / "old-settings"
    shutil.copytree(tiny_pack[0], copy)
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["runs"]:
        if entry["id"] == "the-model-writes-a-call.call.native":
            entry["settings"]["max_new_tokens"] = 80  # as if the panel's limit had changed since
    (copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    monkeypatch.setenv("QWEN_PACK", str(copy))
    monkeypatch.setenv("QWEN_ALLOW_RANDOM_PACKS", "1")
    at = open_page(P3, model="off")
    assert "recorded with max_new_tokens 80; the panel now uses max_new_tokens 40" in warnings(at)
    # the command itself is on the Set-up page (tests/test_panels.py checks the engine's reason names it)
    assert "record the pack again with the command on the Set-up page" in warnings(
        at
    ) and "python -m engine" not in warnings(at)
    assert not shows_probability(at) and LABEL not in infos(at)
    # the react panel's run kept its settings: it is shown
    assert shows_probability(open_page(P3, model="off", style="react"))


def test_an_upload_applies_to_its_session_only_and_a_bad_one_changes_nothing(tiny_pack, monkeypatch):
    monkeypatch.delenv("QWEN_PACK", raising=False)  # assets/packs/ ships no pack
    monkeypatch.setenv("QWEN_ALLOW_RANDOM_PACKS", "1")
    at = open_page(P3, model="off")
    assert not shows_probability(at)
    at.switch_page("app_pages/setup.py").run()  # the upload is on the Set-up page
    at.file_uploader(key="pack_file").set_value(("tiny.zip", zipped(tiny_pack[0]), "application/zip")).run()
    assert not at.exception and any("Lesson pack (yours)" in c.value for c in at.caption)
    assert shows_probability(at.switch_page(P3).run())
    tampered = zipped(
        tiny_pack[0], change=lambda n, b: b[:-10] if n == "runs/the-model-writes-a-call.call.native.json" else b
    )
    at.switch_page("app_pages/setup.py").run()
    at.file_uploader(key="pack_file").set_value(("bad.zip", tampered, "application/zip")).run()
    assert not at.exception and "was changed after the pack was made" in "\n".join(e.value for e in at.error)
    assert shows_probability(at.switch_page(P3).run())  # the good pack is still in use
    other = open_page(P3, model="off")
    assert not shows_probability(other)
