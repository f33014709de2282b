"""An input embedding kept in its checkpoint's 16-bit dtype that gives fp32 rows: an fp32 copy's numbers in half its memory.

An int8 model (engine/model/quant.py) runs in fp32 around its int8 products, and transformers
would keep its embedding in fp32 too: for Qwen3-1.7B 311 million numbers, 1.2 GB, a third of the
loaded model. Read from a bf16 or fp16 checkpoint, every one of them is exactly a 16-bit number,
so a row looked up in 16 bits and then widened is the fp32 row, bit for bit.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


class WideningEmbedding(torch.nn.Module):
    """Stands in for the model's nn.Embedding: the same weight (16-bit), its rows returned in `dtype`."""

    def __init__(self, embedding: torch.nn.Embedding, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.weight = embedding.weight
        self.padding_idx = embedding.padding_idx
        self.num_embeddings, self.embedding_dim = embedding.weight.shape
        self.out_dtype = dtype

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(input_ids, self.weight, self.padding_idx).to(self.out_dtype)
