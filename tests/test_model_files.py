"""A model folder's files and a model's name, refused in one line before anything is read (engine/core/model_files.py).

Each bad file is made in a small tmp folder: a sparse gigabyte file costs no disk and no time to
make, and is refused by its size, fast and with no memory to speak of. Bad names go through
`python -m engine generate --model NAME`, as a teacher types them, and through the Set-up page.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys

import pytest
from helpers import open_page

from engine.__main__ import main
from engine.core.model_files import FILE_LIMITS, check_folder_files, model_name_problem, read_folder_text
from engine.core.tokenizer import QwenTokenizer, load_tokenizer
from engine.errors import ModelFolderRefused, ModelUnavailable
from engine.model.availability import check_model
from engine.model.loading import declares_random_weights, load_weights
from engine.settings import ROOT, VENDORED_TOKENIZER

GIGABYTES = 1_500_000_000  # the attack's size: a sparse file of 1.5 GB


def sparse(path, size: int = GIGABYTES) -> None:
    with open(path, "wb") as handle:
        handle.truncate(size)


def messages_file(tmp_path):
    path = tmp_path / "messages.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    return path


def tokenizer_folder(tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(VENDORED_TOKENIZER, folder)
    return folder


def link_out(folder, name: str) -> None:
    outside = folder.parent / f"outside-{name}"
    shutil.copy(folder / name, outside)
    (folder / name).unlink()
    (folder / name).symlink_to(outside)


def fifo(folder, name: str) -> None:
    (folder / name).unlink()
    os.mkfifo(folder / name)


# what is wrong with the folder -> how it is made, the file read, the one line that answers it
BAD_FOLDERS = {
    "a sparse 1.5 GB tokenizer.json": (
        lambda f: sparse(f / "tokenizer.json"),
        "tokenizer.json",
        "the model folder's tokenizer.json is 1,500 MB (1,500,000,000 bytes); at most 64 MB of it is read",
    ),
    "a sparse 1.5 GB tokenizer_config.json": (
        lambda f: sparse(f / "tokenizer_config.json"),
        "tokenizer_config.json",
        "the model folder's tokenizer_config.json is 1,500 MB (1,500,000,000 bytes); at most 16 MB of it is read",
    ),
    "a 2 MB chat_template.jinja": (
        lambda f: (f / "chat_template.jinja").write_text("x" * (2 * 1024 * 1024)),
        "chat_template.jinja",
        "the model folder's chat_template.jinja is 2 MB (2,097,152 bytes); at most 1 MB of it is read",
    ),
    "tokenizer.json a link out of the folder": (
        lambda f: link_out(f, "tokenizer.json"),
        "tokenizer.json",
        "the model folder's tokenizer.json is a link to ",
    ),
    "tokenizer_config.json a FIFO": (
        lambda f: fifo(f, "tokenizer_config.json"),
        "tokenizer_config.json",
        "the model folder's tokenizer_config.json is a FIFO, not a regular file",
    ),
    "tokenizer.json a folder": (
        lambda f: ((f / "tokenizer.json").unlink(), (f / "tokenizer.json").mkdir()),
        "tokenizer.json",
        "the model folder's tokenizer.json is a folder, not a regular file",
    ),
}


@pytest.mark.parametrize("make, name, message", list(BAD_FOLDERS.values()), ids=list(BAD_FOLDERS))
def test_a_bad_tokenizer_file_is_refused_in_one_line_before_it_is_read(tmp_path, make, name, message):
    folder = tokenizer_folder(tmp_path)
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    if name == "chat_template.jinja":  # the template is read from its own file when tokenizer_config has none
        del config["chat_template"]
        (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    make(folder)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ModelFolderRefused) as caught:
        QwenTokenizer(folder, str(folder))
    message_text = str(caught.value)
    assert message in message_text and "\n" not in message_text
    # refused by its size: no memory grown to read it (its time is not asserted: a busy machine is slow to refuse too)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 500_000  # kB: a read of it would add 1.5 GB


# the files transformers reads by path when the weights load: each is checked before it does
@pytest.mark.parametrize(
    "name, message",
    [
        ("config.json", "the model folder's config.json is 1,500 MB (1,500,000,000 bytes); at most 1 MB of it is read"),
        (
            "generation_config.json",
            "the model folder's generation_config.json is 1,500 MB (1,500,000,000 bytes); at most 1 MB",
        ),
        ("tokenizer.json", "the model folder's tokenizer.json is 1,500 MB"),
        ("model.safetensors.index.json", "the model folder's model.safetensors.index.json is 1,500 MB"),
    ],
)
def test_a_sparse_gigabyte_file_in_a_weights_folder_stops_the_load_at_once(tiny_folder, tmp_path, name, message):
    folder = tmp_path / "model"
    shutil.copytree(tiny_folder, folder)
    sparse(folder / name)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # never a quiet fall-back to the vendored tokenizer: the load says which file and what limit
    with pytest.raises(ModelFolderRefused, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        load_weights(str(folder), device="cpu", dtype="float32")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 500_000  # kB: a read of it would add 1.5 GB
    assert not declares_random_weights(folder) or name != "config.json"


def test_real_folders_fit_their_limits_and_a_cache_snapshot_s_links_are_fine(tmp_path):
    # the vendored tokenizers are the makers' own files, each well inside its limit
    for folder in sorted((ROOT / "assets").glob("*-tokenizer")):
        check_folder_files(folder)
        for path in folder.iterdir():
            assert path.stat().st_size * 3 < FILE_LIMITS.get(path.name, 10**12), path
    # a Hugging Face cache snapshot is links into the model's blobs/ folder
    snapshot = tmp_path / "models--Qwen--Qwen3-1.7B" / "snapshots" / "0123abcd"
    blobs = tmp_path / "models--Qwen--Qwen3-1.7B" / "blobs"
    snapshot.mkdir(parents=True)
    blobs.mkdir()
    for path in VENDORED_TOKENIZER.iterdir():
        shutil.copy(path, blobs / path.name)
        (snapshot / path.name).symlink_to(f"../../blobs/{path.name}")
    assert QwenTokenizer(snapshot, "cached").count("strawberry") == QwenTokenizer(VENDORED_TOKENIZER, "v").count(
        "strawberry"
    )
    # a link from a snapshot to anywhere else is still refused
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("{}", encoding="utf-8")
    (snapshot / "config.json").symlink_to(elsewhere)
    with pytest.raises(ModelFolderRefused, match=f"config.json is a link to {elsewhere}, outside the folder"):
        read_folder_text(snapshot, "config.json")


# -- names: what no folder and no hub id can be -------------------------------------------------------------
BAD_NAMES = {
    "~ and a user this machine lacks": (
        "~nosuchuser-4e1f/model",
        "the model name starts with ~nosuchuser-4e1f, and this machine has no user 'nosuchuser-4e1f'",
    ),
    "a newline": ("Qwen/Qwen3\n-1.7B", "the model name holds a control character ('\\n')"),
    "an escape sequence": ("\x1b[31mQwen", "the model name holds a control character ('\\x1b')"),
    "3,000 characters": ("m" * 3000, "the model name is 3,000 characters, too long for a folder's path"),
    "a 300-byte name in a path": ("/tmp/" + "n" * 300, "the model name is 305 characters, too long"),
}


@pytest.mark.parametrize("name, message", list(BAD_NAMES.values()), ids=list(BAD_NAMES))
def test_a_name_no_folder_can_have_is_one_line_and_exit_2_on_the_command_line(capsys, tmp_path, name, message):
    code = main(["generate", "--model", name, "--messages", str(messages_file(tmp_path))])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    # the page's status check says the same line, without raising
    status = check_model(name)
    assert status.state == "missing" and message in status.message
    assert model_name_problem(name) == status.message


def test_python_m_engine_answers_an_unknown_user_s_folder_in_one_line(tmp_path):
    """`~nosuchuser/model` was a RuntimeError traceback from Path.expanduser."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "generate",
            "--model",
            "~nosuchuser/model",
            "--messages",
            str(messages_file(tmp_path)),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == (
        "error: the model name starts with ~nosuchuser, and this machine has no user 'nosuchuser': "
        "give the folder's full path\n"
    )


def test_a_name_a_folder_can_have_is_not_refused(tmp_path):
    for name in ("Qwen/Qwen3-1.7B", "~/models/qwen3", str(tmp_path / "model"), "tiny"):
        assert model_name_problem(name) is None, name


def test_the_set_up_page_says_a_refused_name_in_one_line(monkeypatch):
    monkeypatch.setenv("QWEN_MODEL", "~nosuchuser-4e1f/model")
    at = open_page("app_pages/setup.py", model="live")
    at.sidebar.button(key="sidebar_load").click().run(timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.sidebar.error]
    assert any("this machine has no user 'nosuchuser-4e1f'" in e for e in errors), errors


def test_the_lessons_keep_the_vendored_tokenizer_when_the_model_s_name_is_refused(monkeypatch):
    monkeypatch.setenv("QWEN_MODEL", "~nosuchuser-4e1f/model")
    monkeypatch.delenv("QWEN_TOKENIZER", raising=False)
    # the function under its cache: what a fresh server reads
    assert load_tokenizer.__wrapped__().source.startswith("vendored Qwen3 tokenizer")


def test_a_load_of_a_refused_name_is_a_model_unavailable():
    with pytest.raises(ModelUnavailable, match="no user 'nosuchuser-4e1f'"):
        load_weights("~nosuchuser-4e1f/model", device="cpu", dtype="float32")
