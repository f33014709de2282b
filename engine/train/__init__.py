"""The shipped model: the synthetic conversations it learns from, its training loop, and its held-out measure."""
