"""The model fails mid-run: a clear GenerationFailed, the shared lock released, and the next run works.

A stand-in model wraps the tiny model's forward pass and raises at a chosen step (out of
memory, a damaged weight file), or a copy of the tiny model has a NaN weight. The stand-in
shares the tiny engine's lock, as every user of one loaded model does.
"""

from __future__ import annotations

import copy
import threading

import pytest
import torch
from helpers import FailingModel

from engine.core.generation import GenerationSettings
from engine.core.prompt import Request, render
from engine.errors import EngineError, GenerationFailed, ModelUnavailable
from engine.harness.loop import iterate_episode
from engine.model.decode import generate, stream_steps
from engine.model.live import LiveModel
from engine.model.loading import LoadedModel, load_weights

MESSAGES = [{"role": "user", "content": "How many r are in strawberry?"}]
# these tests count forward passes (FailingModel's fail_at); with the prefix cache a cold prompt is read
# in two passes (all but its last token, then the last), so they run without it: one pass, then one a step
SETTINGS = GenerationSettings(max_new_tokens=6, temperature=1.0, seed=11, reuse_prefix=False)


def failing_engine(tiny: LoadedModel, fail_at: int, error: BaseException) -> LoadedModel:
    return LoadedModel(FailingModel(tiny.model, fail_at, error), tiny.tokenizer, tiny.info, lock=tiny.lock)


@pytest.fixture(scope="module")
def prompt(tiny_engine):
    return render(Request(MESSAGES), tiny_engine.tokenizer)


@pytest.fixture(scope="module")
def alone(tiny_engine, prompt):
    """What a run gives with nothing else going on."""
    return generate(tiny_engine, prompt, SETTINGS).text


def assert_lock_free(engine: LoadedModel) -> None:
    assert engine.lock.acquire(blocking=False), "the shared lock is still held after the failure"
    engine.lock.release()


@pytest.mark.parametrize(
    "error, fail_at, expected",
    [
        (
            torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
            3,
            r"^the model ran out of memory at step 3 \(OutOfMemoryError: CUDA out of memory\. Tried to allocate 2\.00 GiB\)\. "
            r"The model is still loaded and the next run starts afresh\. Try fewer new tokens",
        ),
        (MemoryError(), 0, r"^the model ran out of memory at step 0 \(MemoryError: \)\. The model is still loaded"),
        (
            RuntimeError("Error while deserializing header: HeaderTooLarge"),
            2,
            r"^the model failed at step 2 \(RuntimeError: Error while deserializing header: HeaderTooLarge\)\. The model is still "
            r"loaded and the next run starts afresh\. If it fails again, its weights may be damaged: download tiny again",
        ),
    ],
    ids=["cuda-out-of-memory", "memory-error-on-the-prompt", "bad-weight-file"],
)
def test_a_failure_mid_run_is_a_clear_error_and_the_next_run_works(
    tiny_engine, prompt, alone, error, fail_at, expected
):
    broken = failing_engine(tiny_engine, fail_at, error)
    seen = []
    with pytest.raises(GenerationFailed, match=expected) as caught:
        for step in stream_steps(broken, prompt.ids, SETTINGS):
            seen.append(step)
    assert isinstance(caught.value, EngineError) and caught.value.__cause__ is error
    assert len(seen) == fail_at  # the steps before the failure came through
    assert_lock_free(tiny_engine)
    # the same shared model, the next run: exactly what it gives alone
    assert generate(tiny_engine, prompt, SETTINGS).text == alone


def test_nan_weights_are_reported_not_sampled(tiny_engine, prompt, alone):
    damaged = copy.deepcopy(tiny_engine.model)
    with torch.no_grad():
        damaged.model.norm.weight[0] = float("nan")
    broken = LoadedModel(damaged, tiny_engine.tokenizer, tiny_engine.info, lock=tiny_engine.lock)
    with pytest.raises(
        GenerationFailed, match=r"^the model's output at step 0 is not a number \(NaN\): its weights may be damaged"
    ):
        generate(broken, prompt, SETTINGS)
    assert_lock_free(tiny_engine)
    assert generate(tiny_engine, prompt, SETTINGS).text == alone


def test_one_users_failure_does_not_touch_another_users_run(tiny_engine, prompt, alone):
    broken = failing_engine(tiny_engine, 2, RuntimeError("out of memory"))
    outcomes: dict[str, object] = {}

    def run(name, engine):
        try:
            outcomes[name] = generate(engine, prompt, SETTINGS).text
        except EngineError as error:
            outcomes[name] = error

    threads = [threading.Thread(target=run, args=(f"user{i}", broken if i == 1 else tiny_engine)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert isinstance(outcomes["user1"], GenerationFailed)
    assert outcomes["user0"] == outcomes["user2"] == alone
    assert_lock_free(tiny_engine)


def test_the_harness_passes_the_failure_on_as_an_engine_error(tiny_engine):
    broken = failing_engine(tiny_engine, 1, RuntimeError("out of memory"))
    with pytest.raises(GenerationFailed, match="ran out of memory at step 1"):
        list(
            iterate_episode(
                LiveModel(broken, GenerationSettings(max_new_tokens=4, reuse_prefix=False)),
                MESSAGES,
                [],
                style="native",
            )
        )
    assert_lock_free(tiny_engine)


def test_a_damaged_weight_file_fails_at_load_with_what_to_do(tiny_engine, tmp_path):
    tiny_engine.model.config.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"\x00\x01 this is not a safetensors file")
    with pytest.raises(ModelUnavailable, match=r"^the weights in .* could not be loaded: "):
        load_weights(str(tmp_path), device="cpu")
