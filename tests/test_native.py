"""The native decode step (engine/model/native_step.c, built by engine/model/native.py) against the torch ops it replaces.

Each C call against its torch twin over shapes and values a hypothesis draws; the bf16 cache
writes against torch's own rounding, bit for bit; the whole tiny model with and without it; and
the build: cached by a hash of the source, rebuilt when it changes, refused in words when there is
no compiler, the compiler fails, or QWEN_NATIVE_STEP=0; and the cache: another user's folder, a
folder open to all or a symlink refused, a library planted under the cache's name never loaded.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import struct
import subprocess
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from helpers import chunks_through, tiny_network
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.model import native
from engine.model.attention import attend
from engine.model.fast_build import build_fast_forward
from engine.model.fast_forward import rms_norm

EPS = 1e-6


@pytest.fixture(scope="module")
def lib():
    built = native.native_library()
    assert built.lib is not None, built.reason  # the test machine has a C compiler (llama-cpp-python needs one too)
    return built.lib


def seeded(*shape, seed: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale


# -- add_norm and silu_mul ---------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 3072),
    seed=st.integers(0, 2**16),
    scale=st.sampled_from([1e-3, 1.0, 40.0]),
    with_delta=st.booleans(),
)
def test_add_norm_is_the_residual_add_and_rms_norm(lib, n, seed, scale, with_delta):
    hidden, delta, weight = (
        seeded(n, seed=seed, scale=scale),
        seeded(n, seed=seed + 1, scale=scale),
        seeded(n, seed=seed + 2),
    )
    expected_hidden = hidden + delta if with_delta else hidden.clone()
    expected = rms_norm(expected_hidden, weight, EPS)
    out = torch.empty(n)
    lib.add_norm(hidden.data_ptr(), delta.data_ptr() if with_delta else None, weight.data_ptr(), out.data_ptr(), n, EPS)
    # the residual add is the same float addition; the norm differs by summation order only
    assert torch.equal(hidden, expected_hidden)
    assert torch.allclose(out, expected, rtol=1e-5, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(width=st.integers(1, 4099), seed=st.integers(0, 2**16), scale=st.sampled_from([0.1, 3.0, 60.0]))
def test_silu_mul_is_silu_of_the_gate_times_up(lib, width, seed, scale):
    gate_up = seeded(2 * width, seed=seed, scale=scale)
    gate_up[0] = -200.0  # exp(200) overflows: silu is -0, not NaN
    out = torch.empty(width)
    lib.silu_mul(gate_up.data_ptr(), out.data_ptr(), width)
    expected = F.silu(gate_up[:width]) * gate_up[width:]
    assert not out.isnan().any()
    assert torch.allclose(out, expected, rtol=1e-5, atol=1e-6)


# -- attend_step ----------------------------------------------------------------------------------------
def rotary(d: int, position: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sign-folded sin for one position, as FastQwen3.rotary_rows builds them."""
    inv_freq = 1.0 / (1e6 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    freqs = torch.tensor(float(position)) * inv_freq
    emb = torch.cat((freqs, freqs))
    sin = emb.sin()
    return emb.cos(), torch.cat((-sin[: d // 2], sin[d // 2 :]))


def torch_step(qkv, qk_norm, cos, sin, cache, past, heads, kv_heads, d):
    """The compact forward's torch ops for one token: normed, rotated heads, the cache rows written, attention."""
    group = heads // kv_heads
    qk = qkv[: (heads + kv_heads) * d].view(heads + kv_heads, d)
    qk = qk_norm * rms_norm(qk, None, EPS)
    qk = qk * cos + qk.roll(d // 2, dims=-1) * sin
    cache[0, :, past] = qk[heads:]
    cache[1, :, past] = qkv[(heads + kv_heads) * d :].view(kv_heads, d)
    q = qk[:heads].reshape(kv_heads, group, d)
    out = attend(q, cache[0, :, : past + 1].float(), cache[1, :, : past + 1].float(), d**-0.5)
    return out.reshape(heads * d)


def native_step(lib, qkv, qk_norm, cos, sin, cache, past, heads, kv_heads, d, threads=1):
    out = torch.empty(heads * d)
    failed = lib.attend_step(
        qkv.data_ptr(),
        qk_norm.data_ptr(),
        cos.data_ptr(),
        sin.data_ptr(),
        cache.data_ptr(),
        int(cache.dtype == torch.bfloat16),
        cache.shape[2],
        past,
        heads,
        kv_heads,
        d,
        EPS,
        d**-0.5,
        out.data_ptr(),
        threads,
    )
    assert failed == 0
    return out


SHAPES = [(1, 1, 16), (4, 2, 64), (8, 8, 32), (8, 1, 16), (16, 8, 128)]  # (heads, kv heads, head_dim): 0.6B's last


@pytest.mark.parametrize("heads, kv_heads, d", SHAPES)
@pytest.mark.parametrize("past", [0, 1, 7, 300])
def test_attend_step_matches_the_torch_ops_over_an_fp32_cache(lib, heads, kv_heads, d, past):
    qkv = seeded((heads + 2 * kv_heads) * d, seed=past + d, scale=3.0)
    qk_norm = seeded(heads + kv_heads, d, seed=1).abs() + 0.5
    cos, sin = rotary(d, past)
    capacity = past + 9
    cache = seeded(2, kv_heads, capacity, d, seed=2)
    mine = cache.clone()
    expected = torch_step(qkv, qk_norm, cos, sin, cache, past, heads, kv_heads, d)
    got = native_step(lib, qkv, qk_norm, cos, sin, mine, past, heads, kv_heads, d)
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)
    # the new key row within rounding, the value row as it came, every other row untouched
    assert torch.allclose(mine[0, :, past], cache[0, :, past], rtol=1e-6, atol=1e-6)
    assert torch.equal(mine[1, :, past], cache[1, :, past])
    untouched = torch.ones(capacity, dtype=torch.bool)
    untouched[past] = False
    assert torch.equal(mine[:, :, untouched], cache[:, :, untouched])


@pytest.mark.parametrize("heads, kv_heads, d", SHAPES[1:])
def test_attend_step_over_a_bf16_cache_widens_the_keys_and_rounds_the_writes(lib, heads, kv_heads, d):
    past = 40
    qkv = seeded((heads + 2 * kv_heads) * d, seed=d, scale=2.0)
    qk_norm = seeded(heads + kv_heads, d, seed=3).abs() + 0.5
    cos, sin = rotary(d, past)
    cache = seeded(2, kv_heads, past + 4, d, seed=4).to(torch.bfloat16)
    mine = cache.clone()
    # the reference keeps q in fp32 as the C step does, over the same widened keys and values
    reference = cache.float()
    expected = torch_step(qkv, qk_norm, cos, sin, reference, past, heads, kv_heads, d)
    got = native_step(lib, qkv, qk_norm, cos, sin, mine, past, heads, kv_heads, d)
    assert torch.equal(mine[1, :, past], reference[1, :, past].to(torch.bfloat16))
    assert torch.allclose(mine[0, :, past].float(), reference[0, :, past], rtol=2**-8, atol=1e-6)
    # the reference attended over unrounded new rows; the C step over their bf16 copies
    assert torch.allclose(got, expected, rtol=2e-2, atol=2e-2)
    reference[:, :, past] = mine[:, :, past].float()
    q_only = torch_step(qkv, qk_norm, cos, sin, reference.clone(), past, heads, kv_heads, d)
    assert torch.allclose(got, q_only, rtol=1e-2, atol=1e-2)


def test_the_bf16_writes_round_as_torch_does_bit_for_bit(lib):
    specials = [
        0.0,
        -0.0,
        1.0,
        1 + 2**-8,
        1 + 3 * 2**-8,
        1 + 2**-8 + 2**-20,
        -(1 + 2**-8),
        3.3895e38,
        3.4e38,
        float("inf"),
        float("-inf"),
        1e-40,
        -1e-40,
        1.17e-38,
        65504.0,
        2**-133,
    ]
    ties = [struct.unpack("<f", struct.pack("<I", (b << 16) | 0x8000))[0] for b in range(0x3F80, 0x3F90)]
    values = torch.tensor(specials + ties, dtype=torch.float32)
    d = values.numel()
    qkv = torch.cat([torch.ones(2 * d), values])  # one query head, one key head, the values under test
    cache = torch.zeros(2, 1, 1, d, dtype=torch.bfloat16)
    native_step(lib, qkv, torch.ones(2, d), torch.ones(d), torch.zeros(d), cache, 0, 1, 1, d)
    assert torch.equal(cache[1, 0, 0].view(torch.int16), values.to(torch.bfloat16).view(torch.int16))
    nan = torch.full((4,), float("nan"))
    cache = torch.zeros(2, 1, 1, 4, dtype=torch.bfloat16)
    native_step(
        lib, torch.cat([torch.ones(8), nan]), torch.ones(2, 4), torch.ones(4), torch.zeros(4), cache, 0, 1, 1, 4
    )
    assert cache[1, 0, 0].isnan().all()


def test_two_threads_give_the_same_bits_as_one(lib):
    heads, kv_heads, d, past = 16, 8, 128, 200
    qkv = seeded((heads + 2 * kv_heads) * d, seed=9)
    norm, (cos, sin) = torch.ones(heads + kv_heads, d), rotary(d, past)
    cache = seeded(2, kv_heads, past + 1, d, seed=10)
    one = native_step(lib, qkv, norm, cos, sin, cache.clone(), past, heads, kv_heads, d, threads=1)
    two = native_step(lib, qkv, norm, cos, sin, cache.clone(), past, heads, kv_heads, d, threads=2)
    # each key/value head is one thread's whole loop: no sum is split between threads
    assert torch.equal(one, two)


# -- the tiny model with and without it ---------------------------------------------------------------
@pytest.mark.parametrize("kind", ["float32", "int8"])
def test_the_tiny_model_gives_the_torch_steps_numbers(kind):
    fast = build_fast_forward(tiny_network(kind))
    assert fast.native is not None and "in C" in fast.native_reason
    ids = [1000 + 17 * n for n in range(40)]
    with torch.no_grad():
        got = chunks_through(fast, ids, 9, fast.new_cache(4))
        fast.native = None
        expected = chunks_through(fast, ids, 9, fast.new_cache(4))
    assert torch.allclose(got, expected, rtol=0, atol=1e-5)
    assert torch.equal(got.argmax(-1), expected.argmax(-1))


def test_a_bf16_model_keeps_torch_ops_and_says_why():
    fast = build_fast_forward(tiny_network("bfloat16"))
    assert fast.native is None
    assert fast.native_reason == "torch ops throughout (the model's activations are bfloat16; the C step reads fp32)"


def test_without_the_library_the_forward_keeps_torch_ops(monkeypatch):
    import engine.model.fast_forward as fast_forward

    monkeypatch.setattr(fast_forward, "native_library", lambda: native.NativeLibrary(None, "QWEN_NATIVE_STEP=0"))
    fast = build_fast_forward(tiny_network("float32"))
    assert fast.native is None and fast.native_reason == "torch ops throughout (QWEN_NATIVE_STEP=0)"
    with torch.no_grad():
        logits = chunks_through(fast, [1000, 1001, 1002, 1003], 2, fast.new_cache(4))
    assert logits.shape == (4, 151936)


# -- the build ------------------------------------------------------------------------------------------
def test_the_library_is_built_once_per_source_and_rebuilt_when_it_changes(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "native_step.c"
    source.write_text(native.SOURCE.read_text())
    monkeypatch.setattr(native, "SOURCE", source)
    first = native.build_library()
    assert first.lib is not None, first.reason
    built = sorted((tmp_path / "cache" / "qwen-tool-explainer" / "native").glob("*.so"))
    assert len(built) == 1
    stamp = built[0].stat().st_mtime_ns
    assert native.build_library().lib is not None and built[0].stat().st_mtime_ns == stamp  # found, not rebuilt
    source.write_text(source.read_text() + "\n/* changed */\n")
    assert native.build_library().lib is not None
    assert len(list(built[0].parent.glob("*.so"))) == 2
    assert not list(built[0].parent.glob("tmp*"))  # the scratch folders are gone


def test_a_source_that_does_not_compile_is_refused_in_words(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    broken = tmp_path / "native_step.c"
    broken.write_text("void add_norm( {\n")
    monkeypatch.setattr(native, "SOURCE", broken)
    built = native.build_library()
    assert built.lib is None
    assert "could not build native_step.c: " in built.reason
    assert "error" in built.reason


def test_no_compiler_and_the_setting_are_refused_in_words(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(native, "compiler", lambda: None)
    assert native.build_library() == native.NativeLibrary(
        None, "no C compiler (cc or gcc) on the PATH to build native_step.c"
    )
    monkeypatch.setenv("QWEN_NATIVE_STEP", "0")
    assert native.build_library() == native.NativeLibrary(None, "QWEN_NATIVE_STEP=0")


def test_the_build_names_only_the_instruction_sets_the_cpu_lists(monkeypatch):
    monkeypatch.setattr(native, "cpu_flags", lambda: {"sse2", "avx2"})
    compile_, link = native.build_commands("cc", None, native.SOURCE.with_name("x.so"))
    assert "-mavx2" in compile_ and "-mfma" not in compile_ and "-march=native" not in compile_
    assert "-fopenmp-simd" in compile_ and "-fopenmp" not in link


# -- the cache is the server's own: another user's folder, a symlink, or a planted library are never loaded --
PLANTED_C = (
    "#include <stdio.h>\n__attribute__((constructor)) static void planted(void) {\n"
    '    FILE *f = fopen("%s", "w"); if (f) { fputs("ran", f); fclose(f); }\n}\n'
)


def planted_library(tmp_path, marker):
    """A library whose constructor writes `marker`: what another user would leave at the cache's name."""
    source = tmp_path / "planted.c"
    source.write_text(PLANTED_C % marker)
    built = tmp_path / "planted.so"
    subprocess.run([native.compiler(), "-shared", "-fPIC", str(source), "-o", str(built)], check=True, timeout=120)
    return built.read_bytes()


def expected_name() -> str:
    cc, openmp = native.compiler(), native.torch_openmp()
    return f"native_step-{native._key(native.build_commands(cc, openmp, Path('native_step.so')))}.so"


def other_users(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, 12345, 12345, follow_symlinks=False)


CACHE_ATTACKS = {
    # the folder another user made at the predictable path, with their library in it
    "another user's folder": ("belongs to another user (uid 12345)", lambda cache, lib: other_users(cache.parent)),
    # a folder any user may write: anyone could have put the library there
    "a folder open to all": ("may be written by other users (mode 777)", lambda cache, lib: cache.chmod(0o777)),
    # the cache folder is a symlink to a folder of another user's choosing
    "a symlinked folder": (
        "is a symlink or not a folder",
        lambda cache, lib: (
            shutil.move(cache, cache.with_name("elsewhere")),
            cache.symlink_to(cache.with_name("elsewhere")),
        ),
    ),
}


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder another user's needs root")
@pytest.mark.parametrize("case", CACHE_ATTACKS)
def test_a_cache_that_is_not_the_servers_own_is_refused(monkeypatch, tmp_path, case):
    said, spoil = CACHE_ATTACKS[case]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    marker = tmp_path / "constructor-ran"
    cache = native.cache_folder()
    cache.mkdir(parents=True)
    (cache / expected_name()).write_bytes(planted_library(tmp_path, marker))
    (cache / (expected_name() + ".sha256")).write_text(
        hashlib.sha256((cache / expected_name()).read_bytes()).hexdigest()
    )
    spoil(cache, cache / expected_name())
    built = native.build_library()
    assert built.lib is None and said in built.reason, built.reason
    assert not marker.exists()  # the planted constructor never ran


def test_a_library_planted_in_the_servers_own_folder_is_built_over(monkeypatch, tmp_path):
    """At the right name with no record, or a record that does not match: built again from the shipped source."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    marker = tmp_path / "constructor-ran"
    cache = native.cache_folder()
    cache.mkdir(parents=True, mode=0o700)
    (cache / expected_name()).write_bytes(planted_library(tmp_path, marker))
    (cache / (expected_name() + ".sha256")).write_text("0" * 64)
    built = native.build_library()
    assert built.lib is not None, built.reason
    assert not marker.exists()
    data = (cache / expected_name()).read_bytes()
    assert (cache / (expected_name() + ".sha256")).read_text() == hashlib.sha256(data).hexdigest()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700 and stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    assert not [p for p in cache.iterdir() if p.name.startswith(".partial")]
