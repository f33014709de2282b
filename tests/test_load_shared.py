"""The live model is loaded once per server process and shared: from a folder, by a background job, by concurrent callers.

A teacher's folder is the tiny model saved with save_pretrained plus the vendored tokenizer files
(fixture `tiny_folder`). Each test loads it under a folder name of its own, because the registry
is process-wide and a name loaded once stays loaded.
"""

from __future__ import annotations

import json
import os
import shutil
import threading

import pytest

from engine.model import loading
from engine.model.availability import check_model
from engine.model.load_jobs import find_job, start_load
from engine.model.loading import declares_random_weights, find_loaded, is_loading, load_model


def copy_folder(source, target, random_weights=None):
    """A copy of a model folder (files hard-linked), with config.json's random_weights key set when asked."""
    shutil.copytree(source, target, copy_function=os.link)
    if random_weights is not None:
        config = json.loads((target / "config.json").read_text())
        config["random_weights"] = random_weights
        (target / "config.json").unlink()  # a hard link: write a new file, not through the shared one
        (target / "config.json").write_text(json.dumps(config))
    return target


def test_a_folder_loads_once_with_its_source_and_no_random_label(tiny_folder, tmp_path):
    folder = copy_folder(tiny_folder, tmp_path / "trained")
    name = str(folder)
    assert find_loaded(name) is None
    model = load_model(name)
    assert model.info.source == "local folder" and model.info.path == name
    assert model.info.random_weights is False and model.info.note is None
    assert "random" not in model.info.label()
    # the tiny model's 2 layers, 64 wide, with the real vocabulary: the folder holds exactly that network
    assert model.info.parameters == sum(p.numel() for p in loading.build_tiny_network().parameters())
    assert load_model(name) is model and find_loaded(name) is model
    assert check_model(name).state == "loaded"


def test_a_folder_whose_config_says_random_weights_is_labelled_so(tiny_folder, tmp_path):
    folder = copy_folder(tiny_folder, tmp_path / "sized", random_weights=True)
    model = load_model(str(folder))
    assert model.info.random_weights is True
    assert model.info.note == loading.RANDOM_FOLDER_NOTE
    assert "random weights" in model.info.label()


@pytest.mark.parametrize(
    "config, expected",
    [
        pytest.param('{"random_weights": true}', True, id="marker"),
        pytest.param('{"random_weights": false}', False, id="marker-false"),
        pytest.param('{"random_weights": "true"}', False, id="string-is-not-true"),
        pytest.param('{"random_weights": 1}', False, id="one-is-not-true"),
        pytest.param('{"model_type": "qwen3"}', False, id="no-marker"),
        pytest.param('[{"random_weights": true}]', False, id="not-an-object"),
        pytest.param('{"random_weights": tru', False, id="broken-json"),
        pytest.param(None, False, id="no-config"),
        pytest.param('{"random_weights": true, "pad": "' + "x" * 1_000_001 + '"}', False, id="huge-config-not-read"),
    ],
)
def test_the_random_weights_marker_is_read_strictly(tmp_path, config, expected):
    if config is not None:
        (tmp_path / "config.json").write_text(config)
    assert declares_random_weights(tmp_path) is expected


def test_two_callers_at_once_load_once(tiny_folder, tmp_path, monkeypatch):
    name = str(copy_folder(tiny_folder, tmp_path / "shared"))
    calls, release = [], threading.Event()
    real = loading.load_weights

    def slow_load(*args, **kwargs):
        calls.append(args[0])
        release.wait(30)  # hold the first load until the second caller is waiting on it
        return real(*args, **kwargs)

    monkeypatch.setattr(loading, "load_weights", slow_load)
    heard, results = [], []
    callers = [
        threading.Thread(target=lambda: results.append(load_model(name))),
        threading.Thread(target=lambda: results.append(load_model(name, progress=lambda d, t, s: heard.append(s)))),
    ]
    callers[0].start()
    while not calls:
        threading.Event().wait(0.01)
    assert is_loading(name) and find_loaded(name) is None
    callers[1].start()
    while not heard:
        threading.Event().wait(0.01)
    release.set()
    for caller in callers:
        caller.join(60)
    assert calls == [name]
    assert len(results) == 2 and results[0] is results[1]
    assert heard[0] == f"{name} is being loaded by another user of this site; waiting for it"
    assert not is_loading(name)


def test_a_load_job_reports_its_stages_and_is_shared_by_every_caller(tiny_folder, tmp_path):
    name = str(copy_folder(tiny_folder, tmp_path / "job"))
    job = start_load(name)
    assert start_load(name) is job and find_job(name) is job
    assert job.wait(120)
    assert job.error is None and job.model is find_loaded(name)
    stages = [stage for _, _, stage in job.events]
    assert stages[0].startswith(f"loading {name} into memory (float32, ")
    assert stages[-1].startswith(f"{name} ready in ")
    # a finished job is kept: a later press finds the model, it does not load again
    assert start_load(name) is job


def test_a_failed_job_says_what_to_fix_and_pressing_again_retries(tiny_folder, tmp_path):
    folder = tmp_path / "incomplete"
    folder.mkdir()
    shutil.copy(tiny_folder / "config.json", folder / "config.json")
    name = str(folder)
    failed = start_load(name)
    assert failed.wait(60)
    assert failed.model is None
    assert failed.error == (
        f"the folder {folder} has no config.json and .safetensors weights. Point QWEN_MODEL at a folder made by "
        "`python -m engine download --model <id>` (look under ~/.cache/huggingface/hub/models--*/snapshots/)."
    )
    assert find_loaded(name) is None and not is_loading(name)
    os.link(tiny_folder / "model.safetensors", folder / "model.safetensors")
    retried = start_load(name)
    assert retried is not failed
    assert retried.wait(120) and retried.error is None
    assert retried.model is find_loaded(name)
