"""engine/model/cpu_speed.py: bf16 on a CPU only where a timing shows it pays, and the expected speed of a size."""

from __future__ import annotations

import pytest

import engine.model.cpu_speed as cpu_speed
from engine.model.cpu_speed import SMALL_MODEL, expected_speed, measure_copy_bandwidth
from engine.model.loading import choose_dtype
from ui.words import words


@pytest.fixture
def timings(monkeypatch):
    """Fake matmul timings: {(dtype name, rows): seconds}; records which were asked for. The CPU's
    flags are unknown (as off x86 Linux) unless a test sets `install.flags[0]`."""
    asked = []
    flags = [None]

    def install(table):
        def fake(dtype, rows, repeats, give_up=float("inf")):
            name = str(dtype).removeprefix("torch.")
            asked.append((name, rows))
            return table[(name, rows)]

        monkeypatch.setattr(cpu_speed, "_time_matmul", fake)
        monkeypatch.setattr(cpu_speed, "read_cpu_flags", lambda: flags[0])
        cpu_speed.cpu_dtype.cache_clear()
        return asked

    install.flags = flags
    yield install
    cpu_speed.cpu_dtype.cache_clear()


@pytest.mark.parametrize(
    ("decode_bf16", "prompt_bf16", "expected", "prompt_measured"),
    [
        (0.5, 0.6, "bfloat16", True),  # native bf16: half the bytes, faster kernels
        (0.6, 1.05, "bfloat16", True),  # prompt pass a little slower, within the margin
        (
            0.63,
            3.2,
            "float32",
            True,
        ),  # this project's 2-core CPU (AVX2, no AVX512-BF16): fewer bytes, slower arithmetic
        (0.95, 0.9, "float32", False),  # no real gain on a decode step
        (60.0, 50.0, "float32", False),  # a slow emulated kernel: the prompt pass is never timed
    ],
)
def test_bf16_is_chosen_only_when_the_timing_shows_it_pays(
    timings, decode_bf16, prompt_bf16, expected, prompt_measured
):
    asked = timings(
        {("float32", 1): 1.0, ("bfloat16", 1): decode_bf16, ("float32", 32): 1.0, ("bfloat16", 32): prompt_bf16}
    )
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


@pytest.mark.parametrize(
    ("parameters", "dtype", "bandwidth", "ms"),
    [
        (596_049_920, "float32", 4e9, 596.0),  # 2.38 GB of weights at 4 GB/s
        (596_049_920, "bfloat16", 4e9, 298.0),
        (2_031_739_904, "float32", 20e9, 406.3),
    ],
)
def test_the_expected_speed_is_weight_bytes_over_bandwidth(parameters, dtype, bandwidth, ms):
    estimate = expected_speed(parameters, dtype, "m", bandwidth=bandwidth)
    assert estimate.ms_per_token == ms
    assert estimate.weight_bytes == parameters * (4 if dtype == "float32" else 2)
    assert estimate.tokens_per_second == round(
        1000 / (parameters * (4 if dtype == "float32" else 2) / bandwidth * 1000), 1
    )


def test_the_copy_bandwidth_is_measured_and_the_suggestion_reads_as_a_sentence():
    assert measure_copy_bandwidth(megabytes=8, repeats=2) > 1e8  # any machine copies more than 100 MB/s
    estimate = expected_speed(cpu_speed.SMALL_MODEL_PARAMETERS, "float32", SMALL_MODEL, bandwidth=5e9)
    text = words("setup", "no gpu", **estimate.as_json())
    assert "Qwen/Qwen3-0.6B" in text and "5.0 GB/s" in text and "476.8 ms a token" in text and "{" not in text


@pytest.mark.parametrize(
    ("flags", "listed"),
    [
        ("flags\t\t: fpu vme sse sse2 avx avx2 fma", False),  # this project's machine
        ("flags\t\t: avx2 avx512f avx512_bf16 avx512_vnni", True),  # Cooper Lake, Zen 4
        ("flags : avx2 amx_bf16 amx_tile amx_int8", True),  # Sapphire Rapids
        ("flags : avx2 avx512bf16", False),  # not the kernel's spelling: no guessing
        ("", None),
        (None, None),  # not x86 Linux: the timing alone decides
    ],
)
def test_the_cpu_flags_say_whether_bf16_instructions_exist(flags, listed):
    assert cpu_speed.listed_bf16_instructions(flags) is listed


def test_a_cpu_without_bf16_instructions_keeps_float32_whatever_a_disturbed_timing_says(timings):
    timings.flags[0] = "flags : fpu sse2 avx2"
    timings({("float32", 1): 1.0, ("bfloat16", 1): 0.5, ("float32", 32): 1.0, ("bfloat16", 32): 0.6})
    choice = cpu_speed.cpu_dtype()
    assert choice.dtype == "float32" and "neither avx512_bf16 nor amx_bf16" in choice.reason
    timings.flags[0] = "flags : avx2 avx512_bf16"
    cpu_speed.cpu_dtype.cache_clear()
    assert cpu_speed.cpu_dtype().dtype == "bfloat16"


def _spin(stop) -> None:
    while not stop.is_set():
        pass


def test_three_busy_processes_do_not_make_an_x86_cpu_without_bf16_choose_it():
    """Seen before the fix: with three processes spinning on this 2-core machine, a third of the
    decode timings made bf16 (11 times slower here when quiet) look faster, and a server loaded
    the model in bf16 for the rest of its life."""
    import multiprocessing

    if cpu_speed.listed_bf16_instructions(cpu_speed.read_cpu_flags()) is not False:
        pytest.skip("this CPU may run bf16 natively (or its flags are unknown): a busy machine may time it either way")
    spawn = multiprocessing.get_context("spawn")
    stop = spawn.Event()
    spinners = [spawn.Process(target=_spin, args=(stop,)) for _ in range(3)]
    for spinner in spinners:
        spinner.start()
    try:
        busy = []
        for _ in range(6):
            cpu_speed.cpu_dtype.cache_clear()
            busy.append(cpu_speed.cpu_dtype().dtype)
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join(timeout=10)
        cpu_speed.cpu_dtype.cache_clear()
    assert busy == ["float32"] * 6
