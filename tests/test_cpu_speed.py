"""engine/cpu_speed.py: bf16 on a CPU only where a timing shows it pays, and the expected speed of a size."""

from __future__ import annotations

import pytest

import engine.cpu_speed as cpu_speed
from engine.cpu_speed import SMALL_MODEL, expected_speed, measure_copy_bandwidth
from engine.loading import choose_dtype
from pages.common.words import words


@pytest.fixture
def timings(monkeypatch):
    """Fake matmul timings: {(dtype name, rows): seconds}; records which were asked for."""
    asked = []

    def install(table):
        def fake(dtype, rows, repeats, give_up=float("inf")):
            name = str(dtype).removeprefix("torch.")
            asked.append((name, rows))
            return table[(name, rows)]

        monkeypatch.setattr(cpu_speed, "_time_matmul", fake)
        cpu_speed.cpu_dtype.cache_clear()
        return asked

    yield install
    cpu_speed.cpu_dtype.cache_clear()


@pytest.mark.parametrize(("decode_bf16", "prompt_bf16", "expected", "prompt_measured"), [
    (0.5, 0.6, "bfloat16", True),  # native bf16: half the bytes, faster kernels
    (0.6, 1.05, "bfloat16", True),  # prompt pass a little slower, within the margin
    (0.63, 3.2, "float32", True),  # this project's 2-core CPU (AVX2, no AVX512-BF16): fewer bytes, slower arithmetic
    (0.95, 0.9, "float32", False),  # no real gain on a decode step
    (60.0, 50.0, "float32", False),  # a slow emulated kernel: the prompt pass is never timed
])
def test_bf16_is_chosen_only_when_the_timing_shows_it_pays(timings, decode_bf16, prompt_bf16, expected, prompt_measured):
    asked = timings({("float32", 1): 1.0, ("bfloat16", 1): decode_bf16, ("float32", 32): 1.0, ("bfloat16", 32): prompt_bf16})
    choice = cpu_speed.cpu_dtype()
    assert choice.dtype == expected
    assert (("bfloat16", 32) in asked) == prompt_measured
    assert ("natively" in choice.reason) == (expected == "bfloat16")
    assert cpu_speed.cpu_dtype() is choice and len(asked) == (4 if prompt_measured else 2)  # measured once per process


def test_the_cpu_default_follows_the_measurement_and_qwen_dtype_overrides_it(timings, monkeypatch):
    timings({("float32", 1): 1.0, ("bfloat16", 1): 0.5, ("float32", 32): 1.0, ("bfloat16", 32): 0.5})
    monkeypatch.delenv("QWEN_DTYPE", raising=False)
    assert choose_dtype("cpu") == "bfloat16"
    assert choose_dtype("cuda") == "bfloat16" and choose_dtype("mps") == "float16"
    monkeypatch.setenv("QWEN_DTYPE", "float32")
    assert choose_dtype("cpu") == "float32"
    assert choose_dtype("cpu", "float16") == "float16"


def test_the_real_measurement_is_consistent_with_its_own_figures():
    cpu_speed.cpu_dtype.cache_clear()
    choice = cpu_speed.cpu_dtype()
    assert choice.dtype in ("float32", "bfloat16")
    ratio = choice.decode_us["bfloat16"] / choice.decode_us["float32"]
    if choice.dtype == "bfloat16":
        assert ratio <= 0.85 and choice.prompt_us["bfloat16"] <= 1.1 * choice.prompt_us["float32"]


@pytest.mark.parametrize(("parameters", "dtype", "bandwidth", "ms"), [
    (596_049_920, "float32", 4e9, 596.0),  # 2.38 GB of weights at 4 GB/s
    (596_049_920, "bfloat16", 4e9, 298.0),
    (2_031_739_904, "float32", 20e9, 406.3),
])
def test_the_expected_speed_is_weight_bytes_over_bandwidth(parameters, dtype, bandwidth, ms):
    estimate = expected_speed(parameters, dtype, "m", bandwidth=bandwidth)
    assert estimate.ms_per_token == ms
    assert estimate.weight_bytes == parameters * (4 if dtype == "float32" else 2)
    assert estimate.tokens_per_second == round(1000 / (parameters * (4 if dtype == "float32" else 2) / bandwidth * 1000), 1)


def test_the_copy_bandwidth_is_measured_and_the_suggestion_reads_as_a_sentence():
    assert measure_copy_bandwidth(megabytes=8, repeats=2) > 1e8  # any machine copies more than 100 MB/s
    estimate = expected_speed(cpu_speed.SMALL_MODEL_PARAMETERS, "float32", SMALL_MODEL, bandwidth=5e9)
    text = words("home", "no gpu", **estimate.as_json())
    assert "Qwen/Qwen3-0.6B" in text and "5.0 GB/s" in text and "476.8 ms a token" in text and "{" not in text
