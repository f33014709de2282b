"""Lesson packs (engine/packs/prepare.py writes them, engine/packs/reader.py and checks.py read them): what a pack holds, that a
replayed run equals a fresh one, resuming, and a table of bad packs that each get a message.

The pack is recorded once per session with the tiny random-weights model (fixture `tiny_pack`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from helpers import zipped
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.__main__ import main
from engine.core.generation import Generation, GenerationSettings
from engine.core.prompt import Request, render
from engine.core.tokenizer import TOOL_CALL
from engine.errors import BadInput
from engine.model.results import FirstToken, MaskRow, SideBySide
from engine.packs.out_folder import write_atomically
from engine.packs.pack import (
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_UPLOAD_BYTES,
    PackError,
    file_hash,
    prompt_hash,
)
from engine.packs.reader import read_pack, read_pack_bytes
from engine.teaching.panels import KINDS

LESSONS = {"why-call-a-tool", "the-model-writes-a-call", "when-not-to-call", "constrained-decoding", "playground"}
MODES = ("auto", "required", "count_letter", "tokenize", "none")
TURNS = ("call", "other-tool", "prose", "prose-then-call")
EXPECTED_RUNS = (
    [
        "why-call-a-tool.no-tools",
        "why-call-a-tool.with-tools.native",
        "why-call-a-tool.with-tools.react",
        "the-model-writes-a-call.call.native",
        "the-model-writes-a-call.call.react",
        "when-not-to-call.first-token.strawberry",
        "when-not-to-call.first-token.france",
    ]
    + [f"constrained-decoding.mask.{turn}.{mode}" for turn in TURNS for mode in MODES]
    + [f"constrained-decoding.side-by-side.{mode}" for mode in MODES]
    + ["playground.episode.native"]
)

STRAWBERRY = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]


def run_cli(*argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(list(argv))
    return code, stdout.getvalue(), stderr.getvalue()


# -- what prepare writes -----------------------------------------------------------------------------
def test_prepare_prints_one_json_summary_and_writes_a_manifest_covering_every_model_panel(tiny_pack):
    out, summary, progress = tiny_pack
    assert summary["out"] == str(out) and summary["runs"] == len(EXPECTED_RUNS) and summary["seconds"] > 0
    assert summary["model"]["name"] == "tiny" and summary["model"]["random_weights"] is True
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [r["id"] for r in manifest["runs"]] == EXPECTED_RUNS
    assert {r["lesson"] for r in manifest["runs"]} == LESSONS and all(r["panel"] == r["id"] for r in manifest["runs"])
    assert manifest["complete"] is True and manifest["project_version"] == "0.1.0"
    assert manifest["created"].startswith("20")
    model = manifest["model"]
    assert (model["name"], model["revision"], model["dtype"], model["device"]) == (
        "tiny",
        "random init, seed 0",
        "float32",
        "cpu",
    )
    assert model["parameters"] == 9_798_016
    for entry in manifest["runs"]:
        assert len(entry["prompt_sha256"]) == 64 and entry["file"] == f"runs/{entry['id']}.json"
        assert file_hash((out / entry["file"]).read_bytes()) == entry["sha256"]
    # progress goes to stderr, one line per run
    assert progress.count("recorded in") == len(EXPECTED_RUNS)


def test_a_runs_prompt_hash_is_the_sha256_of_the_prompts_token_ids(tiny_pack):
    out, _, _ = tiny_pack
    pack = read_pack(out, allow_random=True)
    ids = render(Request(STRAWBERRY, _strawberry_tools(), "native")).ids
    assert pack.run("the-model-writes-a-call.call.native").prompt_sha256 == prompt_hash(ids)
    assert pack.run("the-model-writes-a-call.call.native").recorded_for(ids) and not pack.run(
        "the-model-writes-a-call.call.react"
    ).recorded_for(ids)
    assert prompt_hash([1, 22, 151657]) == hashlib.sha256(b"1,22,151657").hexdigest()


def _strawberry_tools():
    from engine.core.tooldefs import load_tool_set

    return load_tool_set("strawberry")


# -- replay equals a fresh run -------------------------------------------------------------------------
def test_replaying_lesson_3_gives_the_tokens_and_probabilities_of_a_fresh_greedy_run(tiny_pack, tiny_engine):
    from engine.model.live import generate_turn
    from engine.teaching.panels import find_panel

    pack = read_pack(tiny_pack[0], allow_random=True)
    for style in ("native", "react"):
        fresh = generate_turn(
            tiny_engine,
            Request(STRAWBERRY, _strawberry_tools(), style),
            find_panel("the-model-writes-a-call", "call", style).generation_for(True),
        )
        replayed = pack.run(f"the-model-writes-a-call.call.{style}").generation().steps
        assert [s.id for s in replayed] == [s.id for s in fresh.steps]
        # the same float32 arithmetic, but not always in the same order: whether the prompt's start came from the
        # prefix cache (left warm by earlier tests) or from one whole pass moves the 7th significant digit
        assert [s.p for s in replayed] == pytest.approx([s.p for s in fresh.steps], rel=1e-5)
        assert [[a.id for a in s.top] for s in replayed] == [[a.id for a in s.top] for s in fresh.steps]
        assert [[a.p for a in s.top] for s in replayed] == [
            pytest.approx([a.p for a in s.top], rel=1e-5) for s in fresh.steps
        ]


def test_replaying_lesson_5_and_6_gives_the_figures_of_a_fresh_pass(tiny_pack, tiny_engine):
    from engine.constrain.masks import inspect_mask
    from engine.model.peek import first_token, next_logits

    pack = read_pack(tiny_pack[0], allow_random=True)
    ids = render(Request(STRAWBERRY, _strawberry_tools(), "native"), tiny_engine.tokenizer).ids
    recorded, fresh = (
        pack.run("when-not-to-call.first-token.strawberry").first_token(),
        first_token(tiny_engine, ids, top_k=8),
    )
    assert recorded.p[TOOL_CALL] == fresh.p[TOOL_CALL] and recorded.prompt_tokens == fresh.prompt_tokens
    assert [a.id for a in recorded.top] == [a.id for a in fresh.top] and recorded.watched == fresh.watched
    # lesson 6, the call under "required", at its third token
    reply = tiny_engine.tokenizer.encode(
        '<tool_call>\n{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}\n</tool_call>'
    )
    row = pack.run("constrained-decoding.mask.call.required").mask_rows()[2]
    view = inspect_mask(
        _strawberry_tools(),
        tiny_engine.tokenizer.decode(reply[:2]),
        "required",
        logits=next_logits(tiny_engine, ids + reply[:2]),
        top_k=8,
    )
    live = MaskRow.from_view(3, view)
    assert row.number == live.number == 3 and row.allowed == live.allowed
    assert row.forbidden_mass == live.forbidden_mass
    assert [a.id for a in row.top_after] == [a.id for a in live.top_after]
    assert [a.id for a in row.top_before] == [a.id for a in live.top_before]


def test_every_run_reads_into_the_type_the_live_model_gives_and_writes_back_as_stored(tiny_pack):
    """A page draws one type whatever the source: a pack's run reads into the live path's dataclasses,
    and those write back the very JSON the pack holds, so packs already made read unchanged."""
    pack = read_pack(tiny_pack[0], allow_random=True)
    assert {run.kind for run in pack.runs.values()} == set(KINDS)
    for run in pack.runs.values():
        data = run.data
        if run.kind == "generation":
            generation = run.generation()
            assert isinstance(generation, Generation) and generation.model == pack.model.info()
            assert (generation.text, generation.finish) == (data["text"], data["finish"])
            assert [s.as_json() for s in generation.steps] == data["steps"]
            assert (
                generation.output_tokens == data["output_tokens"] and generation.prompt_tokens == data["prompt_tokens"]
            )
            assert generation.settings == GenerationSettings.from_json(run.settings)
        elif run.kind == "side_by_side":
            both = run.side_by_side()
            assert isinstance(both, SideBySide) and both.reason == data["reason"]
            assert both.first_difference == data["first_difference"]
            assert [s.as_json() for s in both.constrained.steps] == data["constrained"]["steps"]
            assert both.unconstrained.text == data["unconstrained"]["text"]
        elif run.kind == "first_token":
            first = run.first_token()
            assert isinstance(first, FirstToken) and first.p == {TOOL_CALL: data["p_tool_call"]}
            assert [{"id": a.id, "token": a.token, "p": a.p} for a in first.top] == data["top"]
        elif run.kind == "masks":
            rows = run.mask_rows()
            assert all(isinstance(row, MaskRow) for row in rows)
            assert [row.as_json() for row in rows] == data["steps"]
        else:
            turns = run.turns()
            assert [(t.text, t.finish, t.output_tokens) for t in turns] == [
                (t["text"], t["finish"], t["output_tokens"]) for t in data["turns"]
            ]
            assert [[s.as_json() for s in t.steps] for t in turns] == [t["steps"] for t in data["turns"]]
        # each reader answers for its own kind only
        other = next(k for k in KINDS if k != run.kind)
        reader = {
            "generation": run.generation,
            "side_by_side": run.side_by_side,
            "first_token": run.first_token,
            "masks": run.mask_rows,
            "episode": run.turns,
        }[other]
        with pytest.raises(BadInput, match=f"is a {run.kind} run"):
            reader()


def test_replaying_an_episode_plays_the_recorded_turns_through_the_harness(tiny_pack):
    from engine.packs.replay import replay_episode

    pack = read_pack(tiny_pack[0], allow_random=True)
    run = pack.run("why-call-a-tool.with-tools.native")
    played, same = replay_episode(run, STRAWBERRY, _strawberry_tools(), "native", max_turns=3)
    assert same and [s.turn.text for s in played.calls] == [t["text"] for t in run.data["turns"]]
    # another question: the recorded turns were not written for it
    other = [{"role": "user", "content": "What is the capital of France?"}]
    played, same = replay_episode(run, other, _strawberry_tools(), "native", max_turns=3)
    # checked before the first turn is handed over: none of its calls ran on a prompt the model never saw
    assert same is False and played.calls == []


# -- resuming, refusing ------------------------------------------------------------------------------
def test_prepare_resumes_keeping_intact_runs_and_redoing_missing_or_damaged_ones(tiny_pack, tmp_path):
    copy = tmp_path / "pack"
    shutil.copytree(tiny_pack[0], copy)
    (copy / "runs" / "when-not-to-call.first-token.france.json").unlink()
    damaged = copy / "runs" / "when-not-to-call.first-token.strawberry.json"
    damaged.write_bytes(damaged.read_bytes()[:100])
    code, stdout, stderr = run_cli("prepare", "--model", "tiny", "--allow-random-weights", "--out", str(copy))
    summary = json.loads(stdout)
    assert code == 0 and (summary["recorded"], summary["kept"]) == (2, len(EXPECTED_RUNS) - 2)
    assert stderr.count("already recorded, kept") == len(EXPECTED_RUNS) - 2
    assert len(read_pack(copy, allow_random=True).runs) == len(EXPECTED_RUNS)


@pytest.mark.parametrize(
    "argv, message",
    [
        pytest.param(["--model", "tiny"], "has random weights", id="random weights without the flag"),
        pytest.param(
            ["--model", "tiny", "--allow-random-weights", "--out-is-a-full-folder"],
            "holds no lesson pack",
            id="a folder that holds something else",
        ),
    ],
)
def test_prepare_refuses_with_a_one_line_message(argv, message, tmp_path):
    out = tmp_path / "out"
    if "--out-is-a-full-folder" in argv:
        argv = [a for a in argv if a != "--out-is-a-full-folder"]
        out.mkdir()
        (out / "notes.txt").write_text("mine", encoding="utf-8")
    code, stdout, stderr = run_cli("prepare", *argv, "--out", str(out))
    last = stderr.strip().splitlines()[-1]
    assert code == 2 and stdout == "" and last.startswith("error: ") and message in last
    assert not (out / "manifest.json").exists()


# -- issue 46: --out is checked before the model loads, and nothing is written through a link ----------------------
def _a_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("mine", encoding="utf-8")
    return path


def _link_to_a_folder(tmp_path: Path) -> Path:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "pack").symlink_to(tmp_path / "elsewhere")
    return tmp_path / "pack"


def _fifo(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "fifo")
    return tmp_path / "fifo"


# (id, the --out path made in tmp_path, the message the one line holds)
BAD_OUTS = [
    (
        "under a file",
        lambda t: _a_file(t) / "pack",
        "notes.txt is a file, so no folder can be made under it; give a path in a folder",
    ),
    ("a file", _a_file, "notes.txt is a file; give a folder (it is created if missing)"),
    ("a FIFO", _fifo, "fifo is a FIFO; give a folder"),
    (
        "named like a flag",
        lambda t: t / "-pack",
        "the name '-pack' starts with '-' and would read as a flag to other commands; give a name that starts with",
    ),
    ("under a new folder named like a flag", lambda t: t / "new" / "-r" / "pack", "the name '-r' starts with '-'"),
    ("a symbolic link", _link_to_a_folder, "is a symbolic link; give the path of the folder itself"),
    (
        "a path of 5,000 bytes",
        lambda t: Path("/".join(["d" * 99] * 50)),
        "--out's path is 4,999 bytes; a path may be up to 4,096",
    ),
]


@pytest.mark.parametrize("make_out, message", [pytest.param(*row[1:], id=row[0]) for row in BAD_OUTS])
def test_prepare_refuses_an_out_it_cannot_make_before_loading(monkeypatch, tmp_path, make_out, message):
    out = make_out(tmp_path)
    before = sorted(tmp_path.rglob("*"))

    def load(args):
        raise AssertionError("a model was loaded before --out was refused")

    monkeypatch.setattr("engine.cli.models.open_engine", load)
    code, stdout, stderr = run_cli("prepare", "--model", "tiny", "--allow-random-weights", f"--out={out}")
    assert (code, stdout) == (2, "") and stderr.startswith("error: --out") and stderr.count("\n") == 1, stderr
    assert message in stderr, stderr
    # nothing made: no folder on the way, no pack, no check left behind
    assert sorted(tmp_path.rglob("*")) == before


def test_prepare_writes_nothing_through_a_link_planted_in_the_pack(monkeypatch, tiny_pack, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.json").write_text("mine", encoding="utf-8")
    monkeypatch.setattr("engine.cli.models.open_engine", lambda args: pytest.fail("loaded before the link was seen"))
    for plant in ("runs", "runs/when-not-to-call.first-token.france.json", "manifest.json"):
        copy = tmp_path / "pack"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(tiny_pack[0], copy)
        if plant == "runs":
            shutil.rmtree(copy / plant)
        else:
            (copy / plant).unlink()
        (copy / plant).symlink_to(victim if plant == "runs" else victim / "keep.json")
        code, stdout, stderr = run_cli("prepare", "--model", "tiny", "--allow-random-weights", "--out", str(copy))
        assert (code, stdout) == (2, "") and f"holds a symbolic link ({plant})" in stderr, stderr
        assert sorted(p.name for p in victim.iterdir()) == ["keep.json"]
        assert (victim / "keep.json").read_text(encoding="utf-8") == "mine"


def test_a_pack_file_replaces_a_link_under_its_name_and_its_partial_name_without_writing_through(tmp_path):
    victim = tmp_path / "victim.json"
    victim.write_text("mine", encoding="utf-8")
    folder = tmp_path / "pack"
    folder.mkdir()
    (folder / ".manifest.json.partial").symlink_to(victim)
    (folder / "manifest.json").symlink_to(victim)
    body = write_atomically(folder / "manifest.json", {"format": "x"})
    assert victim.read_text(encoding="utf-8") == "mine"
    assert not (folder / "manifest.json").is_symlink() and (folder / "manifest.json").read_bytes() == body
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json"]


# -- bad packs: each gets a message, never a traceback ----------------------------------------------------
def _with_manifest(pack: Path, edit) -> bytes:
    """The pack zipped with its manifest edited by `edit(manifest)`."""

    def change(name, body):
        if name != "manifest.json":
            return body
        manifest = json.loads(body)
        edit(manifest)
        return json.dumps(manifest).encode()

    return zipped(pack, change=change)


def _with_run(pack: Path, run_id: str, edit) -> bytes:
    """The pack zipped with one run's data edited and its hash in the manifest made to match."""
    name = f"runs/{run_id}.json"
    data = json.loads((pack / name).read_text(encoding="utf-8"))
    edit(data)
    body = json.dumps(data).encode()

    def change(member, original):
        if member == name:
            return body
        if member == "manifest.json":
            manifest = json.loads(original)
            next(r for r in manifest["runs"] if r["file"] == name)["sha256"] = file_hash(body)
            return json.dumps(manifest).encode()
        return original

    return zipped(pack, change=change)


def _long_strings(pack: Path, count: int, size: int) -> bytes:
    """The pack zipped with `count` run files each holding a string of `size` characters, their hashes made to match."""
    names = sorted(p.relative_to(pack).as_posix() for p in (pack / "runs").glob("*.json"))[:count]
    bodies = {}
    for name in names:
        data = json.loads((pack / name).read_text(encoding="utf-8"))
        data["settings"]["note"] = "x" * size
        bodies[name] = json.dumps(data).encode()

    def change(member, original):
        if member == "manifest.json":
            manifest = json.loads(original)
            for entry in manifest["runs"]:
                if entry["file"] in bodies:
                    entry["sha256"] = file_hash(bodies[entry["file"]])
            return json.dumps(manifest).encode()
        return bodies.get(member, original)

    return zipped(pack, change=change)


def _symlink_zip(pack: Path) -> bytes:
    data = io.BytesIO(zipped(pack))
    with zipfile.ZipFile(data, "a") as archive:
        info = zipfile.ZipInfo("runs/link.json")
        info.external_attr = 0o120777 << 16
        archive.writestr(info, "/etc/passwd")
    return data.getvalue()


def _many_files(pack: Path) -> bytes:
    return zipped(pack, extra={f"runs/x{n}.json": b"{}" for n in range(MAX_FILES)})


BAD_PACKS = [
    # (id, make(pack folder) -> zip bytes, allow_random, what the message must say)
    (
        "a run file changed by hand",
        lambda p: zipped(
            p,
            change=lambda n, b: (
                b.replace(b'"finish": "', b'"finish": "stop', 1)
                if n == "runs/the-model-writes-a-call.call.native.json"
                else b
            ),
        ),
        True,
        "was changed after the pack was made",
    ),
    (
        "a run file truncated",
        lambda p: zipped(
            p, change=lambda n, b: b[: len(b) // 2] if n == "runs/when-not-to-call.first-token.france.json" else b
        ),
        True,
        "sha256 does not match",
    ),
    ("the zip truncated", lambda p: zipped(p)[:5000], True, "zip"),
    ("not a zip at all", lambda p: b"this is not a zip file, only text", True, "not a readable zip"),
    ("a foreign JSON file", lambda p: zipped(p, extra={"runs/extra.json": b"{}"}), True, "foreign file"),
    ("a file that is not JSON", lambda p: zipped(p, extra={"notes.txt": b"hello"}), True, "not JSON"),
    ("a path that climbs out", lambda p: zipped(p, extra={"../evil.json": b"{}"}), True, "outside the pack"),
    ("an absolute path", lambda p: zipped(p, extra={"/etc/evil.json": b"{}"}), True, "outside the pack"),
    (
        "a zip bomb: one huge member",
        lambda p: zipped(p, extra={"runs/bomb.json": b" " * (MAX_FILE_BYTES + 1)}),
        True,
        "bytes uncompressed",
    ),
    ("too many files", _many_files, True, f"more than {MAX_FILES} files"),
    ("a symbolic link", _symlink_zip, True, "symbolic link"),
    ("no manifest", lambda p: zipped(p, drop=("manifest.json",)), True, "has no manifest.json"),
    (
        "another program's manifest",
        lambda p: _with_manifest(p, lambda m: m.update(format="something else")),
        True,
        "not a lesson pack's manifest",
    ),
    ("a later format version", lambda p: _with_manifest(p, lambda m: m.update(version=99)), True, "format version 99"),
    (
        "a run the pack does not hold",
        lambda p: zipped(p, drop=("runs/when-not-to-call.first-token.france.json",)),
        True,
        "does not hold",
    ),
    (
        "a manifest field of the wrong type",
        lambda p: _with_manifest(p, lambda m: m["model"].update(parameters="many")),
        True,
        "'parameters' is a str",
    ),
    (
        "a probability above 1, rehashed",
        lambda p: _with_run(p, "when-not-to-call.first-token.france", lambda d: d.update(p_tool_call=3.5)),
        True,
        "not a probability",
    ),
    (
        "a step without its token, rehashed",
        lambda p: _with_run(p, "the-model-writes-a-call.call.native", lambda d: d["steps"][0].pop("token")),
        True,
        "has no 'token'",
    ),
    (
        "a step whose allowed count is text, rehashed",
        lambda p: _with_run(p, "the-model-writes-a-call.call.native", lambda d: d["steps"][0].update(allowed="all")),
        True,
        "'allowed' is a str",
    ),
    (
        "an episode's step without its probability, rehashed",
        lambda p: _with_run(p, "playground.episode.native", lambda d: d["turns"][0]["steps"][0].pop("p")),
        True,
        "has no 'p'",
    ),
    (
        "a side by side without its reason, rehashed",
        lambda p: _with_run(p, "constrained-decoding.side-by-side.auto", lambda d: d.pop("reason")),
        True,
        "has no 'reason'",
    ),
    ("random weights, not allowed", lambda p: zipped(p), False, "random weights"),
    (
        "JSON nested a million deep",
        lambda p: zipped(p, change=lambda n, b: b"[" * 1_000_000 + b"]" * 1_000_000 if n == "manifest.json" else b),
        True,
        "JSON values",
    ),
    (
        "a run file padded with a key of its own, rehashed",
        lambda p: _with_run(p, "when-not-to-call.first-token.france", lambda d: d.update(padding=[[[]], [[]]])),
        True,
        "never writes",
    ),
    (
        "a run file of 300,000 empty lists, rehashed",
        lambda p: _with_run(
            p,
            "when-not-to-call.first-token.france",
            lambda d: d["top"].append({"id": 1, "token": "x", "p": 0.1, "x": [[]] * 300_000}),
        ),
        True,
        "JSON values",
    ),
    (
        "NaN in a run file, rehashed",
        lambda p: _with_run(p, "when-not-to-call.first-token.france", lambda d: d.update(p_tool_call=float("nan"))),
        True,
        "NaN",
    ),
    # bounded by bytes as well as by count: each string by its field, every file, the whole pack
    (
        "nine 19 MB strings in a small zip, rehashed",
        lambda p: _long_strings(p, 9, 19_000_000),
        True,
        "bytes uncompressed; a pack file may hold up to 8,388,608",
    ),
    (
        "nine 3 MB strings, each file under its cap, rehashed",
        lambda p: _long_strings(p, 9, 3_000_000),
        True,
        "holds a string of 3,000,000 characters; a file `python -m engine prepare` wrote holds none over 65,536",
    ),
    (
        "five 7 MB files",
        lambda p: zipped(p, extra={f"runs/pad{n}.json": b" " * (7 * 2**20) for n in range(5)}),
        True,
        "the pack unpacks to more than 33,554,432 bytes",
    ),
    (
        "a million JSON values over six files",
        lambda p: zipped(p, extra={f"runs/x{n}.json": b"[" + b"[]," * 190_000 + b"[]]" for n in range(6)}),
        True,
        "JSON values in all",
    ),
    (
        "a 15-million-character model name",
        lambda p: _with_manifest(p, lambda m: m["model"].update(name="x" * 15_000_000)),
        True,
        "manifest.json is 15,",
    ),
    (
        "a 5,000-character model name",
        lambda p: _with_manifest(p, lambda m: m["model"].update(name="x" * 5_000)),
        True,
        "manifest.json model: 'name' is 5,000 characters long; `python -m engine prepare` writes at most 1,024 there",
    ),
    (
        "a 1,000-character dtype",
        lambda p: _with_manifest(p, lambda m: m["model"].update(dtype="x" * 1_000)),
        True,
        "'dtype' is 1,000 characters long; `python -m engine prepare` writes at most 200 there",
    ),
    (
        "a 19 MB step token, rehashed",
        lambda p: _with_run(
            p, "the-model-writes-a-call.call.native", lambda d: d["steps"][0].update(token="x" * 19_000_000)
        ),
        True,
        "bytes uncompressed",
    ),
    (
        "a 2,000-character step token, rehashed",
        lambda p: _with_run(
            p, "the-model-writes-a-call.call.native", lambda d: d["steps"][0].update(token="x" * 2_000)
        ),
        True,
        "step 0: 'token' is 2,000 characters long; `python -m engine prepare` writes at most 1,024 there",
    ),
    (
        "a 2,000-character alternative's token, rehashed",
        lambda p: _with_run(p, "when-not-to-call.first-token.france", lambda d: d["top"][0].update(token="x" * 2_000)),
        True,
        "top[0]: 'token' is 2,000 characters long",
    ),
    (
        "a 100,000-character turn text, rehashed",
        lambda p: _with_run(p, "the-model-writes-a-call.call.native", lambda d: d.update(text="x" * 100_000)),
        True,
        "the-model-writes-a-call.call.native.json holds a string of 100,000 characters",
    ),
]


@pytest.mark.parametrize("make, allow_random, message", [pytest.param(*row[1:], id=row[0]) for row in BAD_PACKS])
def test_a_bad_pack_gets_a_clear_message(tiny_pack, make, allow_random, message):
    with pytest.raises(PackError) as refused:
        read_pack_bytes(make(tiny_pack[0]), "pack.zip", allow_random)
    assert message in str(refused.value)


def test_a_small_zip_of_long_strings_is_refused_before_any_of_it_is_kept(tiny_pack):
    """The attack of issue 29: a 181 KiB upload unpacking nine 19 MB strings was kept whole (360 MiB a session)."""
    import tracemalloc

    upload = _long_strings(tiny_pack[0], 9, 19_000_000)
    assert len(upload) - len(_good_zip(tiny_pack[0])) < 200 * 1024  # the strings add under 200 KiB to the zip
    tracemalloc.start()
    try:
        with pytest.raises(PackError, match="a pack file may hold up to 8,388,608"):
            read_pack_bytes(upload, "pack.zip", allow_random=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # refused on the member's stated size, before it is inflated
    assert peak < 8 * 2**20, peak


def test_a_zip_damaged_anywhere_in_its_directory_gets_a_message(tiny_pack):
    """Each of the last 400 bytes (the central directory and its end record) set to 0xFF in turn: a Pack or a PackError,
    never another exception (a damaged offset once raised "ValueError: negative seek value")."""
    good = zipped(tiny_pack[0])
    for offset in range(len(good) - 400, len(good), 3):
        damaged = good[:offset] + b"\xff" + good[offset + 1 :]
        try:
            read_pack_bytes(damaged, "pack.zip", allow_random=True)
        except PackError:
            pass


def test_a_good_pack_zipped_with_or_without_its_folder_reads_back(tiny_pack, tmp_path):
    out = tiny_pack[0]
    plain = read_pack_bytes(zipped(out), "pack.zip", allow_random=True)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in out.rglob("*.json"):
            archive.write(path, f"tiny/{path.relative_to(out).as_posix()}")
        archive.writestr("__MACOSX/._manifest.json", b"\x00\x05")
    nested = read_pack_bytes(buffer.getvalue(), "pack.zip", allow_random=True)
    assert len(plain.runs) == len(nested.runs) == len(EXPECTED_RUNS)
    (tmp_path / "pack.zip").write_bytes(zipped(out))
    assert read_pack(tmp_path / "pack.zip", allow_random=True).label().startswith("tiny (fp32, cpu), recorded 20")


@pytest.mark.parametrize(
    "spoil, message",
    [
        pytest.param(
            lambda d: (d / "runs" / "link.json").symlink_to("/etc/passwd"), "not a plain file", id="a linked file"
        ),
        pytest.param(
            lambda d: (d / "linked").symlink_to(d / "runs", target_is_directory=True),
            "symbolic link",
            id="a linked folder",
        ),
        pytest.param(
            lambda d: (d / "notes.md").write_text("mine", encoding="utf-8"), "not JSON", id="a file that is not JSON"
        ),
        pytest.param(
            lambda d: (d / "runs" / "the-model-writes-a-call.call.native.json").write_text("{}", encoding="utf-8"),
            "sha256 does not match",
            id="a run overwritten",
        ),
    ],
)
def test_a_bad_pack_folder_gets_a_clear_message(tiny_pack, tmp_path, spoil, message):
    copy = tmp_path / "pack"
    shutil.copytree(tiny_pack[0], copy)
    spoil(copy)
    with pytest.raises(PackError, match=message):
        read_pack(copy, allow_random=True)


def test_an_upload_over_the_size_limit_is_refused_before_it_is_opened():
    with pytest.raises(PackError, match="may be up to 50 MB"):
        read_pack_bytes(b"\0" * (MAX_UPLOAD_BYTES + 1), "big.zip")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_damage_to_a_zipped_pack_is_refused_with_a_message_or_leaves_a_valid_pack(tiny_pack, data):
    good = _good_zip(tiny_pack[0])
    where = data.draw(st.integers(0, len(good) - 1))
    damaged = bytearray(good)
    damaged[where] ^= data.draw(st.integers(1, 255))
    try:
        pack = read_pack_bytes(bytes(damaged), "pack.zip", allow_random=True)
    except PackError as error:
        assert str(error)
    else:
        assert len(pack.runs) == len(EXPECTED_RUNS)


_ZIPS: dict[str, bytes] = {}


def _good_zip(folder: Path) -> bytes:
    return _ZIPS.setdefault(str(folder), zipped(folder))
