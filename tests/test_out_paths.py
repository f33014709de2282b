"""engine/core/out_paths.py: where a command writes, checked before the work, and the temporary folder a run owns."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from engine.__main__ import main
from engine.core.out_paths import COMPILE_CACHES, check_temp_root, check_writable_folder, own_temp_folder
from engine.errors import BadInput


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda t: t / "new", "new"),
        (lambda t: t / "a" / "b" / "c", "a/b/c"),
        (lambda t: t, "."),
        (lambda t: t / "x-y" / "pack-1", "x-y/pack-1"),
    ],
    ids=["a new folder", "new folders on the way", "an existing folder", "a '-' inside a name"],
)
def test_a_folder_that_can_be_made_is_taken_and_nothing_is_made(tmp_path, make, expected):
    path = check_writable_folder(make(tmp_path), "--out")
    assert path == tmp_path / expected and sorted(tmp_path.iterdir()) == []


def test_a_link_is_followed_only_where_the_user_configured_it(tmp_path):
    (tmp_path / "disk").mkdir()
    (tmp_path / "cache").symlink_to(tmp_path / "disk")
    with pytest.raises(BadInput, match="is a symbolic link"):
        check_writable_folder(tmp_path / "cache", "--out")
    assert check_writable_folder(tmp_path / "cache", "the cache", follow_link=True) == tmp_path / "cache"
    # a link the user made above the folder is their own path to it
    assert check_writable_folder(tmp_path / "cache" / "pack", "--out") == tmp_path / "cache" / "pack"


def test_a_temp_root_that_is_no_folder_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    with pytest.raises(BadInput, match=r"TMPDIR=.*missing is not a folder; point TMPDIR at a writable folder"):
        check_temp_root()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile reads TMPDIR once
    assert check_temp_root() == tmp_path


def test_the_runs_own_folder_holds_the_compile_caches_and_goes_with_them(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "mine"))
    with own_temp_folder() as folder:
        assert folder.parent == tmp_path and not folder.name.startswith("-")
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(folder / COMPILE_CACHES["TORCHINDUCTOR_CACHE_DIR"])
        # a cache the user set is theirs
        assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "mine")
        # torch writes the folder it made back into the environment
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder / "made")
        (folder / "made").mkdir()
    assert sorted(tmp_path.iterdir()) == []
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ and os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "mine")


def test_download_refuses_a_cache_it_cannot_make_before_asking_the_hub(monkeypatch, capsys, tmp_path):
    from huggingface_hub import constants

    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "notes.txt" / "hub"))
    monkeypatch.setattr("engine.model.weights.hub_reachable", lambda: pytest.fail("asked the hub before the check"))
    code = main(["download", "--model", "someone/no-such-model"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert "the Hugging Face cache (HF_HUB_CACHE)" in err and "notes.txt is a file, so no folder can be made" in err
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == ["notes.txt"]
