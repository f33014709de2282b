"""The mask of one decode step as xgrammar writes it: one bit per id of the model's vocabulary, packed in int32 words.

A compiled grammar (engine/constrain/grammar.py) fills these words at each step; decode.py applies them
as they are, `PackedMask` tests one id or lists the allowed ones without unpacking them all, and a page
that lists tokens unpacks them with `bitmask_to_bool`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..core.tokenizer import MODEL_VOCAB, REAL_VOCAB

WORDS = (MODEL_VOCAB + 31) // 32  # 4,748 int32 words, one bit per id of the model's vocabulary
_LAST_REAL_WORD, _LAST_REAL_BITS = divmod(REAL_VOCAB, 32)  # id 151,669 = word 4,739, bit 21


# the words that hold real ids (up to 151,668) end at word 4,739: 4,740 int32 words = 2,370 uint64 words
_REAL_WORDS = _LAST_REAL_WORD + 1
assert _REAL_WORDS % 2 == 0  # so they view as uint64 words


@dataclass(frozen=True)
class PackedMask:
    """One step's mask as xgrammar writes it: 4,748 int32 words, bit i of word w = id 32*w + i allowed.

    `words` is a view of the constraint's own buffer: valid until its next fill. `allowed`
    counts the real ids (below 151,669) it allows. Nothing is unpacked: decode.py applies the
    words directly, and a page that lists tokens unpacks them with `bitmask_to_bool`.
    """

    words: np.ndarray  # int32, shape (4748,)
    allowed: int

    def allows(self, token_id: int) -> bool:
        """Whether one id is allowed: a single bit test, no unpacking."""
        token_id = int(token_id)
        if not 0 <= token_id < REAL_VOCAB:
            return False
        return bool((int(self.words[token_id >> 5]) >> (token_id & 31)) & 1)

    def allowed_ids(self) -> np.ndarray:
        """The allowed real ids, ascending (int64), unpacking only the 64-bit words that allow something:
        cheap when few are allowed. (Bytes are unpacked in memory order, the order xgrammar's bits follow.)"""
        wide = self.words[:_REAL_WORDS].view(np.uint64)
        nonzero = wide.nonzero()[0]
        bits = np.flatnonzero(np.unpackbits(wide[nonzero].view(np.uint8), bitorder="little"))
        ids = nonzero[bits >> 6] * 64 + (bits & 63)
        return ids[ids < REAL_VOCAB]

    def as_tensor(self) -> torch.Tensor:
        """The words as the (1, 4748) int32 tensor xgrammar's apply_token_bitmask_inplace takes (no copy)."""
        return torch.from_numpy(self.words).unsqueeze(0)


def new_bitmask() -> torch.Tensor:
    import xgrammar as xgr

    return xgr.allocate_token_bitmask(1, MODEL_VOCAB)


def pack_words(words: np.ndarray) -> PackedMask:
    """xgrammar's packed words (int32, 4,748) as a PackedMask with its count: a popcount of the 2,370
    64-bit words that hold real ids (about 4 us), less the padding ids that share the last of them."""
    allowed = int(np.bitwise_count(words[:_REAL_WORDS].view(np.uint64)).sum())
    allowed -= (int(words[_LAST_REAL_WORD].view(np.uint32)) >> _LAST_REAL_BITS).bit_count()
    return PackedMask(words, allowed)


def count_allowed(words: np.ndarray) -> int:
    """How many real ids the packed words allow (padding ids never count)."""
    return pack_words(words).allowed


def bitmask_to_bool(bitmask: torch.Tensor) -> tuple[torch.Tensor, int]:
    """xgrammar's packed int32 bitmask (1, 4748) as a bool tensor over the 151,936 ids, and how
    many of the 151,669 real ids it allows (padding ids False). For a page that lists tokens;
    the decode loop uses the packed words (PackedMask) instead.

    numpy unpacks on one thread: a torch reduction over 151,936 entries goes to the
    thread pool, which on a busy 2-core machine was seen to wait 10 ms for its threads."""
    words = bitmask[0].numpy()
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:MODEL_VOCAB].view(np.bool_)
    bits[REAL_VOCAB:] = False
    return torch.from_numpy(bits), count_allowed(words)
