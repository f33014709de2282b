"""int8 weights with one scale per row, in the layout native_step.c's int8_rows reads, ready to use as they lie in a file.

torch's int8 Linear (engine/model/quant.py) repacks each weight into its kernel's private layout
when it is built, which no file can hold: at Qwen3-0.6B's size that packing alone took several
seconds of every load. These weights are laid out once, as the kernel reads them (blocks of 4
rows, each in chunks of 32 columns, the 4 rows' chunks side by side), so a file of them is used
as it is (engine/model/prepared.py maps it). Each row has its own scale (its largest magnitude
over 127), so rows from several projections stack into one fused product with no change to any
value, and the input row is rounded to int8 over its own largest magnitude as it is multiplied:
twice as close to the fp32 product as torch's int8 Linear, measured on random layers of Qwen3's
shapes (bench notes in docs/engines.md).
"""

from __future__ import annotations

import torch

from .native import native_library

BLOCK, CHUNK = 4, 32  # rows in a block, columns in a chunk (native_step.c's ROWS8_BLOCK and ROWS8_CHUNK)
# rows of a weight widened to fp32 at a time when it is quantized (4 MB of fp32 at a width of 1024)
_SLICE_ELEMENTS = 1 << 20


def fits(width: int) -> bool:
    """Whether a product over `width` input values can be laid out here (whole chunks of 32 columns)."""
    return width > 0 and width % CHUNK == 0


def quantize_rows(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """int8 values of `weight` (rows, width; any float dtype) and one fp32 scale per row (its largest magnitude
    over 127), rounded to nearest; a slice of rows widened to fp32 at a time, so no fp32 copy of it exists."""
    rows, width = weight.shape
    ints = torch.empty(rows, width, dtype=torch.int8)
    scale = torch.empty(rows, dtype=torch.float32)
    step = max(1, _SLICE_ELEMENTS // max(1, width))
    for begin in range(0, rows, step):
        part = weight[begin : begin + step].float()
        top = part.abs().amax(dim=1)
        # a row of zeros has scale 0 and int8 zeros
        inverse = torch.where(top > 0, 127.0 / top, torch.zeros_like(top))
        ints[begin : begin + step] = torch.round(part * inverse[:, None]).clamp_(-127, 127).to(torch.int8)
        scale[begin : begin + step] = top / 127.0
    return ints, scale


def interleave(ints: torch.Tensor) -> torch.Tensor:
    """(rows, width) int8 values in the kernel's layout: blocks of 4 rows (the last padded with zero rows), each in
    chunks of 32 columns, a chunk's 4 rows side by side; flat."""
    rows, width = ints.shape
    if not fits(width):
        raise ValueError(f"a width of {width} is not a whole number of {CHUNK}-column chunks")
    blocks = -(-rows // BLOCK)
    padded = torch.zeros(blocks * BLOCK, width, dtype=torch.int8)
    padded[:rows] = ints
    return padded.view(blocks, BLOCK, width // CHUNK, CHUNK).transpose(1, 2).reshape(-1)


def padded_scale(scale: torch.Tensor) -> torch.Tensor:
    """The scales, one per row, padded with zeros to whole blocks (the kernel reads only the real rows)."""
    rows = scale.shape[0]
    out = torch.zeros(-(-rows // BLOCK) * BLOCK, dtype=torch.float32)
    out[:rows] = scale
    return out


class Rows8:
    """One product x @ W.T for W prepared here (`packed`: interleave's layout; `scale`: padded_scale's), run by
    native_step.c's int8_rows on torch's thread count; stands where engine/model/fast_forward.py's Product does."""

    int8 = True

    def __init__(self, packed: torch.Tensor, scale: torch.Tensor, rows: int, width: int, lib=None):
        if not fits(width):
            raise ValueError(f"a width of {width} is not a whole number of {CHUNK}-column chunks")
        blocks = -(-rows // BLOCK)
        if packed.dtype != torch.int8 or packed.numel() != blocks * BLOCK * width:
            raise ValueError(f"{packed.numel()} int8 values do not lay out {rows} rows of {width}")
        if scale.dtype != torch.float32 or scale.numel() != blocks * BLOCK:
            raise ValueError(f"{scale.numel()} scales for {rows} rows")
        self.packed, self.scale, self.rows, self.width = packed.contiguous(), scale.contiguous(), rows, width
        self.lib = lib if lib is not None else native_library().lib
        if self.lib is None:
            raise RuntimeError(f"int8 rows need the native step library ({native_library().reason})")

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.width).float().contiguous()
        out = torch.empty(flat.shape[0], self.rows)
        status = self.lib.int8_rows(
            flat.data_ptr(),
            self.packed.data_ptr(),
            self.scale.data_ptr(),
            out.data_ptr(),
            flat.shape[0],
            self.rows,
            self.width,
            torch.get_num_threads(),
        )
        if status != 0:
            raise MemoryError(f"the int8 product could not allocate its {flat.shape[0]} x {self.width} int8 input")
        return out.view(*x.shape[:-1], self.rows)

    def take(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows `ids` of W in fp32 (int8 values times their scale): an embedding lookup in the tied weights."""
        chunks = self.width // CHUNK
        blocks = self.packed.view(-1, chunks, BLOCK, CHUNK)
        flat = ids.reshape(-1)
        rows = blocks[flat // BLOCK, :, flat % BLOCK, :].reshape(flat.shape[0], self.width)
        return (rows.float() * self.scale[flat, None]).view(*ids.shape, self.width)

    def dequantized(self) -> torch.Tensor:
        """W in fp32 (for tests and comparisons; a model never holds this)."""
        return self.take(torch.arange(self.rows))


def rows8_of(weight: torch.Tensor, lib=None) -> Rows8:
    """A float weight (rows, width) quantized per row and laid out for the kernel."""
    ints, scale = quantize_rows(weight)
    return Rows8(interleave(ints), padded_scale(scale), weight.shape[0], weight.shape[1], lib)


class Rows8Module(torch.nn.Module):
    """A Rows8 product where a module is expected (the lm_head, the time of a thread probe)."""

    def __init__(self, product: Rows8):
        super().__init__()
        self.product = product
        self.in_features, self.out_features = product.width, product.rows

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.product(x)


class Rows8Embedding(torch.nn.Module):
    """An input embedding read from a Rows8 product's rows (tied to the lm_head: one copy serves both)."""

    def __init__(self, product: Rows8):
        super().__init__()
        self.product = product
        self.num_embeddings, self.embedding_dim = product.rows, product.width

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.product.take(input_ids)
