"""Training in parts: a run stopped, saved and resumed ends on the same weights as one that never stopped.

A small network (the real vocabulary, a tiny hidden size) for a few steps: bit for bit on one machine and
thread count is the promise `train-builtin --resume` makes, so the test compares tensors exactly.
"""

from __future__ import annotations

import json
import math
import re
from argparse import Namespace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from helpers import small_train_config  # noqa: E402

from engine.core.tokenizer import load_tokenizer  # noqa: E402
from engine.errors import BadInput  # noqa: E402

TOK = load_tokenizer()


def tiny_config(**changes):
    """Six steps, each pool small, so a run can be stopped at 3 and resumed."""
    settings = dict(steps=6, warmup=2, decay_steps=2, batch_tokens=2500, pool=24, log_every=2, sampled_rows=2000)
    return small_train_config(**{**settings, **changes})


def weights(run) -> dict:
    found = {f"network.{k}": v.detach().clone() for k, v in run.network.state_dict().items()}
    if run.spelled is not None:
        found.update({f"spelled.{k}": v.detach().clone() for k, v in run.spelled.state_dict().items()})
    return found


def test_a_run_stopped_saved_and_resumed_ends_on_the_same_weights_as_one_that_never_stopped(tmp_path):
    from engine.train.checkpoint import load_run, save_run
    from engine.train.training import advance, start_run

    whole = start_run(tiny_config(), TOK)
    advance(whole, TOK, whole.config.steps)

    first = start_run(tiny_config(), TOK)
    advance(first, TOK, 6, should_stop=lambda: first.step >= 3, save=lambda r: save_run(r, tmp_path / "run"))
    assert first.step == 3
    # a fresh process would read the run back from the folder alone
    second = load_run(tmp_path / "run", TOK)
    assert second.step == 3 and len(second.queue) == len(first.queue)
    advance(second, TOK, second.config.steps)

    ended, resumed = weights(whole), weights(second)
    assert ended.keys() == resumed.keys()
    for name, tensor in ended.items():
        assert torch.equal(tensor, resumed[name]), name
    # the optimizer's moments and the loss curve agree too, and each part of the run is recorded
    assert [p["loss"] for p in whole.curve] == [p["loss"] for p in second.curve]
    assert [(p["from"], p["to"]) for p in second.parts] == [(0, 3), (3, 6)]
    assert all(p["threads"] == 1 and p["machine"] and p["cpu_seconds"] >= 0 for p in second.parts)


def test_the_schedule_warms_up_stays_flat_and_decays_over_its_last_steps():
    from engine.train.training import schedule

    config = tiny_config(steps=100, warmup=10, decay_steps=20, lr=1.0, min_lr_ratio=0.1)
    rates = [schedule(step, config) for step in range(100)]
    assert rates[0] == pytest.approx(0.1) and rates[9] == pytest.approx(1.0)
    assert set(rates[10:80]) == {1.0}
    assert rates[80] == pytest.approx(1.0) and rates[99] < 0.12
    assert all(a >= b for a, b in zip(rates[80:], rates[81:], strict=False))
    # a finished copy of a checkpoint at step s decays over steps s .. s + decay_steps
    config.steps = 60 + config.decay_steps
    assert schedule(59, config) == 1.0 and math.isclose(schedule(79, config), rates[99])


def test_a_warm_start_keeps_every_saved_weight_and_the_spelled_rows_as_they_were_saved(tmp_path):
    from engine.train.training import finish, start_run

    source = start_run(tiny_config(steps=2), TOK)
    from engine.train.training import advance

    advance(source, TOK, 2)
    finish(source, tmp_path / "saved")
    saved = {k: v.float() for k, v in source.network.state_dict().items()}  # bf16 after saving, as stored

    warm = start_run(tiny_config(steps=2), TOK, init_from=tmp_path / "saved")
    assert warm.config.init_from == "saved"
    # the word rows are built from their pieces again, and the built rows are the saved ones
    built = warm.spelled.weight().detach()
    assert torch.allclose(built, saved["model.embed_tokens.weight"], atol=1e-5)
    for name, tensor in warm.network.state_dict().items():
        if name not in ("model.embed_tokens.weight", "lm_head.weight"):
            assert torch.equal(tensor, saved[name]), name


def cli_args(tmp_path: Path, **changes) -> Namespace:
    args = {
        "out": str(tmp_path / "m"),
        "seed": 0,
        "threads": None,
        "steps": 4,
        "checkpoint_every": 0,
        "checkpoint_dir": None,
        "save_every": None,
        "resume": None,
        "finish": False,
        "init_from": None,
        "minutes": None,
        "stop_at": None,
        "decay_steps": None,
        "warmup": None,
        "lr": None,
        "rotate_places": False,
        "composed_share": None,
        "kv_heads": None,
        "head_dim": None,
        "no_measure": True,
    }
    return Namespace(**{**args, **changes})


@pytest.mark.parametrize(
    "changes, said",
    [
        ({"minutes": 5.0}, "--minutes stops a run part-way, and only a checkpoint keeps it: give --checkpoint-dir DIR"),
        ({"stop_at": 2}, "--stop-at stops a run part-way, and only a checkpoint keeps it: give --checkpoint-dir DIR"),
        ({"finish": True}, "--finish finishes a saved run: give --resume DIR with it"),
        (
            {"minutes": 0.0, "checkpoint_dir": "c"},
            "--minutes must be above 0 and at most 43,200 (thirty days), not 0.0",
        ),
        ({"save_every": 0, "checkpoint_dir": "c"}, "--save-every must be between 1 and 1,000,000, not 0"),
        ({"decay_steps": -1}, "--decay-steps must be between 0 and 1,000,000, not -1"),
        ({"warmup": 0}, "--warmup must be between 1 and 1,000,000, not 0"),
        ({"lr": 0.0}, "--lr is a learning rate above 0 and at most 1, not 0.0"),
        ({"lr": float("nan")}, "--lr is a learning rate above 0 and at most 1, not nan"),
        ({"threads": 0}, "--threads must be between 1 and 256, not 0"),
        ({"resume": "r", "init_from": "i"}, "--resume continues a run that has its own weights; --init-from starts"),
        ({"out": None}, "--out names the folder the model is written to"),
        ({"out": "-step-1"}, "--out -step-1: a name that starts with '-' reads as a flag"),
        ({"resume": "nowhere"}, "--resume nowhere: no checkpoint there (run.json and state.pt)"),
        ({"init_from": "nowhere"}, "--init-from nowhere: no config.json there"),
    ],
)
def test_train_builtin_refuses_what_it_cannot_do_before_it_trains(tmp_path, monkeypatch, changes, said):
    from engine.train.cli import train_builtin

    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInput, match=re.escape(said)):
        train_builtin(cli_args(tmp_path, **changes))
    assert not (tmp_path / "m").exists() and not (tmp_path / "c").exists()


def test_an_out_folder_under_a_file_is_refused_in_one_line_before_training(tmp_path):
    from engine.train.cli import train_builtin

    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInput, match=r"lies under .*file, which is a file: the folder can never be made"):
        train_builtin(cli_args(tmp_path, out=str(tmp_path / "file" / "model")))


def test_a_checkpoint_never_writes_through_a_link_planted_in_its_folder(tmp_path):
    from engine.train.checkpoint import save_run
    from engine.train.training import start_run

    outside = tmp_path / "outside.json"
    outside.write_text("kept")
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.json").symlink_to(outside)
    (folder / "run.json.partial").symlink_to(outside)
    save_run(start_run(tiny_config(), TOK), folder)
    assert outside.read_text() == "kept"
    assert not (folder / "run.json").is_symlink() and json.loads((folder / "run.json").read_text())["step"] == 0


def test_the_stopper_stops_after_a_signal_at_a_step_or_when_its_minutes_are_up():
    from engine.train.cli import Stopper

    class Step:
        step = 2

    stopper = Stopper(None, 3)
    stopper.run = Step()
    assert not stopper()
    Step.step = 3
    assert stopper()
    asked = Stopper(None, None)
    assert not asked()
    asked.ask()
    assert asked()
    assert Stopper(1e-9, None)()


def test_a_finished_copy_may_decay_over_another_length_and_leaves_the_checkpoint_as_it_was(tmp_path):
    from engine.train.checkpoint import read_record, save_run
    from engine.train.cli import train_builtin
    from engine.train.training import advance, start_run

    run = start_run(tiny_config(), TOK)
    advance(run, TOK, 6, should_stop=lambda: run.step >= 3, save=lambda r: save_run(r, tmp_path / "run"))
    args = cli_args(tmp_path, resume=str(tmp_path / "run"), finish=True, decay_steps=4, out=str(tmp_path / "m"))
    answer = train_builtin(args)
    # the run's own decay is 2 steps; this copy decayed over 4, from step 3
    assert answer["steps"] == 7 and json.loads((tmp_path / "m" / "training.json").read_text())["steps"] == 7
    assert read_record(tmp_path / "run")["step"] == 3 and read_record(tmp_path / "run")["config"]["decay_steps"] == 2
    with pytest.raises(BadInput, match=re.escape("--decay-steps must be between 1 and 1,000,000, not 0")):
        train_builtin(
            cli_args(tmp_path, resume=str(tmp_path / "run"), finish=True, decay_steps=0, out=str(tmp_path / "z"))
        )
