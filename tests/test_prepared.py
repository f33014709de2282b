"""engine/model/rows8.py, prepared.py and int8_prepared.py: int8 rows multiplied exactly as their integers say, weights
prepared once per folder and mapped after, and nothing in the cache trusted that this code did not write for it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from engine.model.int8_prepared import SETTING
from engine.model.lean import parameter_count, read_config
from engine.model.loading import build_tiny_network, load_weights, load_words
from engine.model.native import native_library
from engine.model.prepared import RECORD, WEIGHTS, entry_folder
from engine.model.quant import QuantChoice
from engine.model.rows8 import BLOCK, CHUNK, Rows8, interleave, padded_scale, quantize_rows, rows8_of

IDS = torch.tensor([[151644, 872, 198, 4340, 1657, 435, 304, 72600, 30, 151645]])
MAPPED = "mapped the weights prepared at an earlier load"
PREPARED = "prepared int8 weights once and mapped them (later loads map them at once)"

pytestmark = pytest.mark.skipif(native_library().lib is None, reason="no C compiler: int8 rows need native_step.c")


def integer_reference(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The product int8_rows computes, from its definition: x rounded to int8 per row, integer sums, then the scales."""
    ints, scale = quantize_rows(weight)
    flat = x.reshape(-1, weight.shape[1])
    top = flat.abs().amax(dim=1)
    inverse = torch.where(top > 0, torch.tensor(127.0) / top, torch.zeros_like(top))
    xq = torch.round(flat * inverse[:, None])
    sums = (xq.double() @ ints.double().T).float()
    return (sums * (top / torch.tensor(127.0))[:, None] * scale[None, :]).view(*x.shape[:-1], weight.shape[0])


@pytest.mark.parametrize(
    ("rows", "width", "tokens"),
    [(1, 32, 1), (3, 32, 2), (4, 64, 1), (5, 64, 3), (7, 96, 2), (8, 128, 5), (130, 256, 1), (129, 1024, 4)],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_int8_rows_give_exactly_the_integer_products(rows, width, tokens, threads):
    generator = torch.Generator().manual_seed(rows * 1000 + width)
    weight = torch.randn(rows, width, generator=generator) * 0.05
    x = torch.randn(1, tokens, width, generator=generator)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        got = rows8_of(weight)(x)
    finally:
        torch.set_num_threads(before)
    assert got.shape == (1, tokens, rows)
    # the integer sums are exact: the same floats to the bit, on the AVX2 path or the plain C one, any thread count
    assert torch.equal(got, integer_reference(x, weight))
    # and close to the fp32 product: within a few hundredths of the largest output
    assert float((got - x @ weight.T).abs().max()) <= 0.03 * float((x @ weight.T).abs().max()) + 1e-6


def test_a_row_of_zeros_and_an_input_of_zeros_give_zeros():
    weight = torch.randn(6, 32)
    weight[2] = 0
    product = rows8_of(weight)
    assert float(product(torch.randn(1, 32))[0, 2]) == 0.0
    assert torch.equal(product(torch.zeros(2, 32)), torch.zeros(2, 6))
    # a NaN in the input is not rounded away: its row's outputs are NaN
    x = torch.randn(2, 32)
    x[1, 5] = float("nan")
    out = product(x)
    assert not out[0].isnan().any() and out[1].isnan().all()


def test_the_layout_puts_each_value_where_the_kernel_reads_it():
    rows, width = 6, 64
    ints = torch.arange(rows * width, dtype=torch.int64).remainder(251).sub(125).to(torch.int8).view(rows, width)
    flat = interleave(ints)
    # two blocks of 4 rows (the second padded with zero rows), two chunks of 32 columns each
    assert flat.numel() == 2 * BLOCK * width
    for n in range(rows):
        for k in range(width):
            at = ((n // BLOCK) * (width // CHUNK) + k // CHUNK) * BLOCK * CHUNK + (n % BLOCK) * CHUNK + k % CHUNK
            assert flat[at] == ints[n, k]
    assert not flat.view(2, 2, BLOCK, CHUNK)[1, :, 2:].any()
    assert padded_scale(torch.ones(6)).tolist() == [1.0] * 6 + [0.0] * 2


def test_rows_are_looked_up_as_their_int8_values_times_their_scale():
    weight = torch.randn(9, 64)
    ints, scale = quantize_rows(weight)
    product = Rows8(interleave(ints), padded_scale(scale), 9, 64)
    ids = torch.tensor([[0, 8, 4, 4]])
    assert torch.equal(product.take(ids), (ints.float() * scale[:, None])[ids])
    # each row's largest magnitude is 127 (or -127), and a bf16 weight quantizes as its fp32 widening does
    assert set(ints.abs().amax(dim=1).tolist()) == {127}
    half = weight.bfloat16()
    assert all(torch.equal(a, b) for a, b in zip(quantize_rows(half), quantize_rows(half.float()), strict=True))


@pytest.mark.parametrize(("rows", "width", "problem"), [(4, 48, "not a whole number"), (4, 0, "not a whole number")])
def test_a_width_the_kernel_cannot_read_is_refused_in_words(rows, width, problem):
    with pytest.raises(ValueError, match=problem):
        Rows8(torch.zeros(rows * max(width, 1), dtype=torch.int8), torch.zeros(4), rows, width)


# -- a folder's load ---------------------------------------------------------------------------------------
def write_tiny(folder: Path, dtype=torch.bfloat16) -> Path:
    build_tiny_network().to(dtype).save_pretrained(folder)
    return folder


def load_int8(folder: Path, said: list | None = None):
    events = said if said is not None else []
    return load_weights(
        str(folder), "cpu", quant=QuantChoice("int8", "asked", {}), progress=lambda *event: events.append(event[2])
    )


def logits(engine) -> torch.Tensor:
    return engine.model(IDS).logits


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "prepared"
    monkeypatch.setenv("QWEN_PREPARED_DIR", str(root))
    return root


def test_a_folder_is_prepared_once_then_mapped_with_the_same_numbers(tmp_path, cache):
    folder = write_tiny(tmp_path / "tiny")
    said = []
    first = load_int8(folder, said)
    assert (
        "preparing int8 weights once for this folder (kept for later loads): no prepared weights for this folder yet"
        in said
    )
    assert first.model.prepared_reason == PREPARED and load_words(first).startswith(PREPARED)
    said.clear()
    again = load_int8(folder, said)
    assert again.model.prepared_reason == MAPPED and not any("preparing" in s for s in said)
    assert torch.equal(logits(first), logits(again))
    # what the Set-up page says of it, and the parameters a float load counts
    assert again.reasons["decode_step"].startswith("norms, attention, the MLP's gate and the int8 products in C")
    assert again.info.quant == "int8" and again.info.parameters == parameter_count(read_config(folder))
    fp32 = load_weights(str(folder), "cpu", "float32", quant=QuantChoice("none", "asked", {}))
    assert again.info.parameters == fp32.info.parameters
    # int8 rows stay close to fp32: the same top token at every position of the prompt
    assert torch.equal(logits(again).argmax(-1), logits(fp32).argmax(-1))
    assert float((logits(again) - logits(fp32)).abs().max()) < 0.05 * float(logits(fp32).abs().max())
    # its file is the user's own, unreadable to others' writes, and nothing else is left in the cache
    entry = entry_folder(folder, SETTING)
    assert sorted(os.listdir(entry)) == [RECORD, WEIGHTS]
    assert not os.stat(entry / WEIGHTS).st_mode & 0o077 and not os.stat(entry).st_mode & 0o077


def test_a_decode_over_prepared_weights_matches_one_step_at_a_time(tmp_path, cache):
    from engine.core.generation import GenerationSettings
    from engine.model.decode import stream_steps

    engine = load_int8(write_tiny(tmp_path / "tiny"))
    settings = GenerationSettings(max_new_tokens=6, top_k=5, reuse_prefix=False, stop_ids=())
    steps = list(stream_steps(engine, IDS[0].tolist(), settings))
    # the native step (one token) and the prompt pass (many) compute the same products: each greedy token is
    # the argmax of a full pass over the sequence so far
    ids = IDS[0].tolist()
    for step in steps:
        full = engine.model(torch.tensor([ids])).logits[0, -1]
        assert float(full[step.id]) >= float(full.max()) - 1e-4
        ids.append(step.id)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda folder: (folder / "config.json").write_text((folder / "config.json").read_text() + "\n"), "changed"),
        (lambda folder: os.utime(folder / "model.safetensors", ns=(1, 1)), "changed"),
    ],
)
def test_a_folder_changed_after_it_was_prepared_is_prepared_again(tmp_path, cache, change, why):
    folder = write_tiny(tmp_path / "tiny")
    load_int8(folder)
    change(folder)
    said = []
    assert load_int8(folder, said).model.prepared_reason == PREPARED
    assert any(s.startswith("preparing int8 weights once") and why in s for s in said)


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))


def _open_to_others(path: Path) -> None:
    os.chmod(path, 0o666)


def _symlinked(path: Path) -> None:
    target = path.with_name("elsewhere.safetensors")
    path.rename(target)
    path.symlink_to(target)


def _put_back_with_its_times(path: Path) -> None:
    # altered, then its modification time set back: the change time cannot be
    info = path.stat()
    _flip_a_byte(path)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def _record_unreadable(path: Path) -> None:
    path.with_name(RECORD).write_text("{not json")


def _cut_short(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size - 100)


@pytest.mark.parametrize(
    ("tamper", "why"),
    [
        (_flip_a_byte, "altered since it was written"),
        (_open_to_others, "not this user's own"),
        (_symlinked, "missing or a symlink"),
        (_put_back_with_its_times, "altered since it was written"),
        (_record_unreadable, "its record of prepared weights is unreadable"),
        (_cut_short, "not the size it was written at"),
    ],
)
def test_a_prepared_file_altered_or_not_the_users_own_is_refused_and_prepared_again(tmp_path, cache, tamper, why):
    folder = write_tiny(tmp_path / "tiny")
    first = logits(load_int8(folder))
    tamper(entry_folder(folder, SETTING) / WEIGHTS)
    said = []
    again = load_int8(folder, said)
    assert any(s.startswith("preparing int8 weights once") and why in s for s in said), said
    assert again.model.prepared_reason == PREPARED and torch.equal(logits(again), first)
    # and the next load maps the file just written
    assert load_int8(folder).model.prepared_reason == MAPPED


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_prepared_file_of_another_user_is_refused(tmp_path, cache):
    folder = write_tiny(tmp_path / "tiny")
    load_int8(folder)
    os.chown(entry_folder(folder, SETTING) / WEIGHTS, 65534, 65534)
    said = []
    assert load_int8(folder, said).model.prepared_reason == PREPARED
    assert any("not this user's own" in s for s in said)


def test_a_cache_folder_open_to_others_is_refused_in_words(tmp_path, cache):
    cache.mkdir(mode=0o777)
    os.chmod(cache, 0o777)
    said = []
    engine = load_int8(write_tiny(tmp_path / "tiny"), said)
    # the load goes on with the weights prepared in memory, and says why they were not kept
    assert engine.model.prepared_reason.startswith("prepared in memory: the prepared-weights cache is not usable")
    assert "may be written by other users" in engine.model.prepared_reason


def test_a_cache_that_cannot_be_written_leaves_the_weights_in_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("QWEN_PREPARED_DIR", str(blocker / "prepared"))
    folder = write_tiny(tmp_path / "tiny")
    engine = load_int8(folder)
    assert engine.model.prepared_reason.startswith("prepared in memory: the prepared-weights cache is not usable")
    monkeypatch.setenv("QWEN_PREPARED_DIR", str(tmp_path / "fine"))
    assert torch.equal(logits(engine), logits(load_int8(folder)))


def test_what_this_path_does_not_cover_is_read_as_before_in_words(tmp_path, cache, monkeypatch):
    from dataclasses import replace

    from engine.model.network import TINY_SHAPE, build_qwen3

    folder = write_tiny(tmp_path / "tiny")
    odd = tmp_path / "odd"
    # a width that is not a whole number of 32-column chunks: the checkpoint is read into torch's int8 Linear
    build_qwen3(replace(TINY_SHAPE, intermediate=100), seed=0).to(torch.bfloat16).save_pretrained(odd)
    said = []
    assert not hasattr(load_int8(odd, said).model, "prepared_reason")
    assert any(s.startswith("reading the checkpoint into int8 (") and "100 is not a whole number" in s for s in said)
    monkeypatch.setenv("QWEN_PREPARED", "0")
    said.clear()
    engine = load_int8(folder, said)
    assert not hasattr(engine.model, "prepared_reason") and "reading the checkpoint into int8 (QWEN_PREPARED=0)" in said
    assert not cache.exists() or not any(cache.iterdir())


def test_the_cache_dtype_is_timed_at_the_thread_count_the_load_settles_on(tmp_path, cache, monkeypatch):
    from engine.model import attention

    timed = []

    def fake(layers, kv_heads, group, head_dim, threads, native):
        timed.append(threads)
        return attention.CacheChoice(torch.float32, "timed", {"float32": 1.0})

    monkeypatch.setattr(attention, "_measured_choice", fake)
    monkeypatch.setenv("QWEN_KV_DTYPE", "auto")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("QWEN_THREADS", "1")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        # the prepared network is built before the load applies QWEN_THREADS: its cache is chosen after
        engine = load_int8(write_tiny(tmp_path / "tiny"))
    finally:
        torch.set_num_threads(before)
    assert timed == [1] and engine.reasons["kv_cache"] == "timed"


def test_entries_no_load_will_use_again_are_removed_when_another_is_written(tmp_path, cache):
    import json
    import shutil

    from engine.model.prepared import forget_stale

    kept, gone, other = (write_tiny(tmp_path / name) for name in ("kept", "gone", "other"))
    for folder in (kept, gone):
        load_int8(folder)
    # an entry another version of this code wrote, one being written (no record yet), one that is not an entry
    old = entry_folder(other, SETTING)
    load_int8(other)
    record = json.loads((old / RECORD).read_text())
    (old / RECORD).unlink()
    (old / RECORD).write_text(json.dumps({**record, "version": 1}))
    os.chmod(old / RECORD, 0o600)
    writing = cache / ("0" * 20)
    writing.mkdir(mode=0o700)
    (writing / WEIGHTS).write_bytes(b"half")
    (cache / "notes").mkdir()
    shutil.rmtree(gone)
    # the next entry written prunes: the removed folder's and the old version's go, the rest stay
    fresh = write_tiny(tmp_path / "fresh")
    load_int8(fresh)
    left = set(os.listdir(cache))
    assert entry_folder(kept, SETTING).name in left and entry_folder(fresh, SETTING).name in left
    assert entry_folder(gone, SETTING).name not in left and old.name not in left
    assert {"0" * 20, "notes"} <= left
    # nothing left to forget, and the kept folder still maps what it prepared
    assert forget_stale() == []
    assert load_int8(kept).model.prepared_reason == MAPPED
