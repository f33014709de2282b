"""Page tests (streamlit AppTest) with a lesson pack and the model off: every model panel shows the
recorded figures at once, labelled with the pack's model and date; a run recorded for another prompt
is not shown; a random-weights pack needs QWEN_ALLOW_RANDOM_PACKS=1; an upload is the uploader's alone.

The pack is the tiny model's (fixture `tiny_pack`), so QWEN_ALLOW_RANDOM_PACKS=1 is set where it is used.
"""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import open_page, zipped

from engine.packs.pack import read_pack

P1, P3, P5, P6, PG = (
    "app_pages/why_call_a_tool.py", "app_pages/the_model_writes_a_call.py", "app_pages/answer_and_when_not_to_call.py",
    "app_pages/constrained_decoding.py", "app_pages/playground.py",
)
LABEL = "Recorded with tiny (fp32, cpu), recorded 20"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def infos(at) -> str:
    return "\n".join(i.value for i in at.info)


def warnings(at) -> str:
    return "\n".join(w.value for w in at.warning)


def probability(p: float) -> str:
    """Lesson 3's format for a token's probability."""
    return f"{p:.1%}" if p >= 0.001 else f"{p:.2e}"


def percent(p: float) -> str:
    """Lesson 5's format."""
    return f"{p * 100:.3g}%" if p >= 1e-9 else f"{p * 100:.1e}%"


@pytest.fixture
def pack(tiny_pack, monkeypatch):
    """The tiny pack as the server's pack (QWEN_PACK), random weights admitted."""
    monkeypatch.setenv("QWEN_PACK", str(tiny_pack[0]))
    monkeypatch.setenv("QWEN_ALLOW_RANDOM_PACKS", "1")
    return read_pack(tiny_pack[0], allow_random=True)


def test_lesson_3_shows_each_tokens_recorded_probability_labelled_as_recorded(pack):
    at = open_page(P3, model="off")
    steps = pack.run("lesson3-native").steps
    assert LABEL in infos(at) and "random weights" in infos(at)
    assert metrics(at)["Its probability"] == probability(steps[0].p)
    assert f"Token 1 of {len(steps)}" in metrics(at)  # tokens count from 1, as on lessons 4 and 6
    at.button(key="call_next").click().run()
    assert metrics(at)["Its probability"] == probability(steps[1].p)
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert sorted(chart["data"][0]["x"], reverse=True) == [a.p for a in steps[1].top]


def test_lesson_3_in_react_shows_the_react_recording(pack):
    at = open_page(P3, model="off", style="react")
    steps = pack.run("lesson3-react").steps
    assert metrics(at)["Its probability"] == probability(steps[0].p)


def test_lesson_5_shows_the_recorded_p_tool_call_for_both_questions(pack):
    at = open_page(P5, model="off")
    shown = [m.value for m in at.metric if m.label == "P(<tool_call>) as the first token"]
    assert shown == [percent(pack.run(f"lesson5-{q}").data["p_tool_call"]) for q in ("strawberry", "france")]
    assert infos(at).count(LABEL) == 2


def test_lesson_1_shows_both_recorded_runs(pack):
    at = open_page(P1, model="off")
    bare = pack.run("lesson1-no-tools").data
    assert LABEL in infos(at)
    assert any(c.value == f"{len(bare['steps'])} tokens, finish: {bare['finish']}" for c in at.caption)
    turns = pack.run("lesson1-tools-native").data["turns"]
    # each recorded turn is drawn as the live view draws it: literally, a long run of blank lines as one count
    from ui.literal import reply_html

    shown = [m.value for m in at.markdown]
    assert all(reply_html(turn["text"]) in shown for turn in turns)
    assert at.code[0].value.startswith("<tool_call>")  # the scripted run's code blocks come after


def test_lesson_6_shows_the_recorded_mask_before_and_after_and_the_two_decodes(pack):
    at = open_page(P6, model="off", step="3", tool_choice="required")
    row = pack.run("lesson6-mask-call-required").data["steps"][2]
    assert metrics(at)["Probability the model put on forbidden tokens"] == f"{row['forbidden_mass']:.2%}"
    before = json.loads(at.get("plotly_chart")[1].proto.spec)["data"][0]["x"]
    assert before == [r["p"] for r in row["top_before"]]
    pair = pack.run("lesson6-pair-required").data
    # both recorded replies, drawn literally (the pack's label is above them, not on each)
    from ui.literal import reply_html

    shown = [m.value for m in at.markdown]
    assert reply_html(pair["unconstrained"]["text"], None) in shown and reply_html(pair["constrained"]["text"], None) in shown


def test_the_playground_replays_the_recorded_episode_at_once(pack):
    at = open_page(PG, model="off", mode="live")
    turns = pack.run("playground-native").data["turns"]
    assert LABEL in infos(at)
    assert metrics(at)["Calls"] == str(len(turns))
    assert metrics(at)["Output tokens"] == f"{sum(t['output_tokens'] for t in turns):,}"


def test_a_random_weights_pack_is_refused_without_the_switch(tiny_pack, monkeypatch):
    monkeypatch.setenv("QWEN_PACK", str(tiny_pack[0]))
    monkeypatch.delenv("QWEN_ALLOW_RANDOM_PACKS", raising=False)
    at = open_page(P3, model="off")
    assert "Its probability" not in metrics(at)
    sidebar = "\n".join(c.value for c in at.sidebar.caption)
    assert "cannot be used" in sidebar and "random weights" in sidebar


def test_a_run_recorded_for_another_prompt_is_not_shown_as_current(tiny_pack, tmp_path, monkeypatch):
    copy = tmp_path / "stale"
    shutil.copytree(tiny_pack[0], copy)
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["runs"]:
        if entry["id"] in ("lesson3-native", "lesson5-france"):
            entry["prompt_sha256"] = "0" * 64  # as if the lesson's prompt had changed since
    (copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    monkeypatch.setenv("QWEN_PACK", str(copy))
    monkeypatch.setenv("QWEN_ALLOW_RANDOM_PACKS", "1")
    at = open_page(P3, model="off")
    assert "recorded for a different prompt" in warnings(at) and "Its probability" not in metrics(at)
    at = open_page(P5, model="off")
    assert "recorded for a different prompt" in warnings(at)
    assert len([m for m in at.metric if m.label == "P(<tool_call>) as the first token"]) == 1  # strawberry only


def test_an_upload_applies_to_its_session_only_and_a_bad_one_changes_nothing(tiny_pack, monkeypatch):
    monkeypatch.delenv("QWEN_PACK", raising=False)  # assets/packs/ ships no pack
    monkeypatch.setenv("QWEN_ALLOW_RANDOM_PACKS", "1")
    at = open_page(P3, model="off")
    assert "Its probability" not in metrics(at)
    at.file_uploader(key="pack_file").set_value(("tiny.zip", zipped(tiny_pack[0]), "application/zip")).run()
    assert not at.exception and "Its probability" in metrics(at)
    assert any("Lesson pack (yours)" in c.value for c in at.sidebar.caption)
    tampered = zipped(tiny_pack[0], change=lambda n, b: b[:-10] if n == "runs/lesson3-native.json" else b)
    at.file_uploader(key="pack_file").set_value(("bad.zip", tampered, "application/zip")).run()
    assert not at.exception and "was changed after the pack was made" in "\n".join(e.value for e in at.error)
    assert "Its probability" in metrics(at)  # the good pack is still in use
    other = open_page(P3, model="off")
    assert "Its probability" not in metrics(other)
