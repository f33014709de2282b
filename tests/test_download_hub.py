"""Downloading the live model from a hub: progress, a cut connection, and a retry, against a hub on 127.0.0.1.

tests/local_hub.py serves the tiny model's saved folder the way the Hugging Face hub does.
huggingface_hub reads HF_ENDPOINT once, when imported, so each download runs in a fresh
Python process with HF_ENDPOINT at the local hub and HF_HOME in a temporary folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from local_hub import COMMIT, LocalHub

ROOT = Path(__file__).resolve().parent.parent
REPO = "local/tiny-qwen3"

# the sidebar's path, without the page: a background load job, its progress events, the loaded model's label
LOAD_JOB = """
import json, sys
from engine.model.load_jobs import start_load
job = start_load(sys.argv[1])
job.wait(300)
info = job.model.info.as_json() if job.model else None
print(json.dumps({"error": job.error, "events": job.events, "info": info}))
"""


def hub_env(hub: LocalHub, home: Path) -> dict:
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HOME": str(home), "PYTHONPATH": str(ROOT)}
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        env.pop(name, None)
    return env


def run(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_a_cut_connection_says_what_failed_and_how_to_get_the_weights_then_a_retry_downloads(tiny_folder, tmp_path):
    size = (tiny_folder / "model.safetensors").stat().st_size
    with LocalHub(tiny_folder, REPO, cut_after=1_000_000) as hub:
        env = hub_env(hub, tmp_path / "hf")
        cut = run(["-m", "engine", "download", "--model", REPO], env)
        assert cut.returncode == 2 and cut.stdout == ""
        error = cut.stderr.splitlines()[-1]
        assert error.startswith(f"error: cannot load the model '{REPO}'. Tried: a local folder of that name (none), ")
        assert (
            "the download failed: RemoteProtocolError: peer closed connection without sending complete message body"
            in error
        )
        assert f"(received 1000000 bytes, expected {size})" in error
        assert f"run `python -m engine download --model {REPO}` on a machine that is online" in error
        assert f"GET /{REPO}/resolve/{COMMIT}/model.safetensors" in hub.requests

        hub.cut_after = None  # the hub is healthy again: the same command now succeeds
        retry = run(["-m", "engine", "download", "--model", REPO], env)
    assert retry.returncode == 0, retry.stderr
    result = json.loads(retry.stdout)
    assert result["source"] == "downloaded" and result["revision"] == COMMIT
    assert result["files"] == [
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    assert f"downloading {REPO}: {size / 1e6:,.1f} / {size / 1e6:,.1f} MB (100%)" in retry.stderr
    got = Path(result["path"]) / "model.safetensors"
    assert (
        hashlib.sha256(got.read_bytes()).digest()
        == hashlib.sha256((tiny_folder / "model.safetensors").read_bytes()).digest()
    )


def test_a_load_job_reports_download_progress_then_loads_and_keeps_the_folders_random_weights_marker(
    tiny_folder, tmp_path
):
    served = tmp_path / "served"
    shutil.copytree(tiny_folder, served)
    config = json.loads((served / "config.json").read_text())
    (served / "config.json").write_text(json.dumps({**config, "random_weights": True}))
    with LocalHub(served, REPO) as hub:
        done = run(["-c", LOAD_JOB, REPO], hub_env(hub, tmp_path / "hf"))
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["error"] is None
    total = sum(p.stat().st_size for p in served.iterdir() if p.suffix in (".json", ".safetensors"))
    downloads = [(d, t) for d, t, stage in result["events"] if stage == f"downloading {REPO}"]
    stages = [stage for d, t, stage in result["events"] if t == 0]
    # bytes written so far against the sum of the file sizes, never backwards, ending at the whole
    assert downloads and all(t == total for _, t in downloads)
    assert [d for d, _ in downloads] == sorted(d for d, _ in downloads) and downloads[-1][0] == total
    assert stages[0] == f"{REPO} is not in the local cache; trying the Hugging Face hub"
    assert stages[1].startswith(f"loading {REPO} into memory (float32, ")
    assert stages[-1].startswith(f"{REPO} ready in ")
    info = result["info"]
    assert info["source"] == "downloaded" and info["revision"] == COMMIT
    assert info["random_weights"] is True and "random weights" in info["note"]


@pytest.mark.parametrize("path", [f"/api/models/{REPO}/revision/main", f"/{REPO}/resolve/{COMMIT}/config.json"])
def test_the_local_hub_answers_only_its_own_repo(tiny_folder, path):
    import urllib.error
    import urllib.request

    with LocalHub(tiny_folder, REPO) as hub:
        with urllib.request.urlopen(hub.url + path, timeout=10) as answer:
            assert answer.status == 200
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(hub.url + path.replace(REPO, "other/repo"), timeout=10)
    assert refused.value.code == 404


CACHE_FOLDER = """
import json, sys
from engine.model.weights import find_cached_weights, hub_cache_folder
ours = str(hub_cache_folder())
missing = find_cached_weights("Qwen/Qwen3-1.7B")
imported = "huggingface_hub" in sys.modules
from huggingface_hub import constants
print(json.dumps({"ours": ours, "theirs": constants.HF_HUB_CACHE, "missing": missing, "imported": imported}))
"""


@pytest.mark.parametrize(
    "variables",
    [
        {},
        {"HF_HOME": "{tmp}/home"},
        {"XDG_CACHE_HOME": "{tmp}/xdg"},
        {"HUGGINGFACE_HUB_CACHE": "{tmp}/legacy"},
        {"HF_HUB_CACHE": "{tmp}/hub", "HUGGINGFACE_HUB_CACHE": "{tmp}/legacy", "HF_HOME": "{tmp}/home"},
        {"HF_HOME": "$CACHE_ROOT/home", "CACHE_ROOT": "{tmp}"},
    ],
    ids=["home", "hf-home", "xdg", "legacy", "hf-hub-cache-first", "variables-expanded"],
)
def test_a_model_not_in_the_cache_is_known_without_importing_huggingface_hub(tmp_path, variables):
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    for name in ("HF_HOME", "XDG_CACHE_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        env.pop(name, None)
    env.update({name: value.format(tmp=tmp_path) for name, value in variables.items()})
    done = run(["-c", CACHE_FOLDER], env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # the folder huggingface_hub itself would look in, and no import of it to say "not there" (a second on Home)
    assert result["ours"] == result["theirs"] and result["ours"].startswith(str(tmp_path))
    assert result["missing"] is None and result["imported"] is False
