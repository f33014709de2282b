"""The decode loop that shows its work: one token at a time, with its probability and the alternatives.

A manual loop over a KV cache (on a CPU Qwen3, the compact forward's preallocated one,
engine/model/fast_forward.py; elsewhere transformers' DynamicCache), the same computation as
`model.generate` with greedy or temperature / top-p sampling, but yielding every step as
data, as minGPT's `encode_and_show_work` does for BPE. At each step:

    prompt -> its longest prefix kept by an earlier run on this model is copied in (engine/model/prefix_cache.py),
              and only the rest is read
    logits -> mask the 267 padding ids (>= 151,669, not real tokens)
           -> constraint mask, if one is active: xgrammar's packed words as they are (the few allowed
              ids read off the nonzero words, or -inf written over the forbidden ones in place)
           -> softmax(logits / temperature)  = the probabilities shown, never estimated
           -> pick: argmax (temperature 0) or a draw from the top-p nucleus with a seeded generator
           -> constraint.accept(id)

At temperature 0 the probabilities shown are the plain softmax (temperature 1): greedy picks
the same token either way, and the model's own distribution is what a lesson wants to show.
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from ..core.generation import Alternative, DecodeStep, Generation, GenerationSettings, ModelInfo
from ..core.tokenizer import MODEL_VOCAB, REAL_VOCAB
from ..errors import BadInput, EngineError, GenerationFailed
from .fast_build import fast_forward_for
from .loading import LoadedModel
from .prefix_cache import prefix_cache_for


class Constraint(Protocol):
    """The hook constrained decoding plugs into (engine/constrain/masks.py builds one from a request's tools).

    A constraint may also offer `next_packed()` -> engine.constrain.packed_mask.PackedMask | None (xgrammar's
    packed words and the allowed count); the loop then uses it in place of next_mask() and never
    unpacks the mask to one bool per id.
    """

    def next_mask(self) -> torch.Tensor | None:
        """A bool tensor over the model vocabulary (151,936, or at least the 151,669 real ids); True = allowed.

        None when nothing is restricted at this step."""

    def accept(self, token_id: int) -> None:
        """Called with each chosen token, the stop token included."""


# -- one step's arithmetic ------------------------------------------------------------------
def normalize_mask(mask: torch.Tensor, index: int) -> torch.Tensor:
    """The constraint's mask as a bool tensor of MODEL_VOCAB entries on the CPU (padding ids False).

    A full-width mask is used as it is (its padding ids set False in place): a constraint hands
    over a fresh mask at every step, and a copy of 151,936 entries per token is time wasted.
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.dim() != 1:
        raise EngineError(
            f"the constraint's mask at step {index} must be a 1-D torch.bool tensor, not {type(mask).__name__}"
        )
    mask = mask.to("cpu")
    if not REAL_VOCAB <= mask.numel() <= MODEL_VOCAB:
        raise EngineError(
            f"the constraint's mask at step {index} has {mask.numel()} entries; it needs {REAL_VOCAB} to {MODEL_VOCAB}"
        )
    if mask.numel() == MODEL_VOCAB:
        mask[REAL_VOCAB:] = False
        return mask
    full = torch.zeros(MODEL_VOCAB, dtype=torch.bool)
    full[:REAL_VOCAB] = mask[:REAL_VOCAB]
    return full


def allowed_logits(scaled: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The allowed ids (ascending) and their logits: a softmax over these alone gives the same numbers
    as one over the whole vocabulary with the forbidden logits at -inf (exp(-inf) adds nothing), at
    the cost of the allowed tokens only; under a grammar that is often a handful of the 151,936.
    """
    # numpy finds the allowed ids about 6 times faster than torch.nonzero on a CPU
    ids = torch.from_numpy(np.flatnonzero(mask.numpy()))
    return ids, scaled[ids]


# up to this many allowed ids the loop gathers their logits (cost grows with the allowed ids); above
# it, xgrammar writes -inf over the forbidden ones in place (cost grows with the forbidden ids)
SPARSE_LIMIT = 16384


@dataclass
class MaskedDistribution:
    """One masked step's distribution: over `ids` only (sparse), or over the whole vocabulary with
    the forbidden logits at -inf (ids None)."""

    probs: torch.Tensor
    ids: torch.Tensor | None
    allowed: int
    log_total: torch.Tensor  # log(sum(exp)) of the allowed scaled logits, for the model's own view

    def token(self, where: int) -> int:
        return where if self.ids is None else int(self.ids[where])


def masked_distribution(scaled: torch.Tensor, mask, index: int, keep_scaled: bool) -> MaskedDistribution:
    """The renormalised distribution under `mask` (a PackedMask, or a bool tensor from next_mask()).

    A packed mask is used as xgrammar wrote it: few allowed ids are read off the nonzero words
    (PackedMask.allowed_ids); many are applied with xgrammar's apply_token_bitmask_inplace on the logits. Nothing
    is unpacked to one bool per id. `keep_scaled`: leave `scaled` untouched (the model's own view needs it).
    """
    if isinstance(mask, torch.Tensor):
        ids, allowed_scaled = allowed_logits(scaled, normalize_mask(mask, index))
        allowed = int(ids.numel())
    else:
        allowed = mask.allowed
        ids = None
        if allowed <= SPARSE_LIMIT:
            ids = torch.from_numpy(mask.allowed_ids())
            allowed_scaled = scaled[ids]
        else:
            import xgrammar as xgr

            allowed_scaled = scaled.clone() if keep_scaled else scaled
            xgr.apply_token_bitmask_inplace(allowed_scaled, mask.as_tensor())
    if allowed == 0:
        raise EngineError(
            f"the constraint allowed no token at step {index}; its grammar cannot continue the text so far"
        )
    probs = torch.softmax(allowed_scaled, dim=-1)
    # log(sum(exp)) of the allowed logits, read back off the softmax at its largest entry
    peak = int(fast_topk(probs, 1)[1][0])
    log_total = allowed_scaled[peak] - torch.log(probs[peak])
    return MaskedDistribution(probs, ids, allowed, log_total)


def what_the_model_wanted(
    scaled: torch.Tensor, allowed_lse: torch.Tensor, chosen: int, k: int, engine: LoadedModel
) -> tuple[float, float, list[Alternative]]:
    """Under a mask: the chosen token's probability had nothing been forbidden, the mass the model
    put on forbidden tokens, and its own top-k, from log-sum-exps (no second softmax over the vocabulary).

    forbidden mass = 1 - exp(lse(allowed) - lse(all)), taken with expm1 so a tiny mass stays exact.
    """
    total = torch.logsumexp(scaled, dim=-1)
    forbidden = float((-torch.expm1(allowed_lse - total)).clamp(min=0.0))
    top: list[Alternative] = []
    if k:
        values, where = fast_topk(scaled, k)
        top = [
            Alternative(i, engine.tokenizer.token_text(i), p)
            for i, p in zip(where.tolist(), torch.exp(values - total).tolist(), strict=True)
        ]
    return float(torch.exp(scaled[chosen] - total)), forbidden, top


NUCLEUS_HEAD = 64  # the most likely tokens looked at first; a nucleus is most often a handful


def nucleus(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """`probs` with everything outside the top-p nucleus set to 0 (the most likely token always stays)."""
    if top_p >= 1.0:
        return probs
    # the head's mass reaching top_p means the nucleus lies inside it: no sort of the whole vocabulary
    # (about 15 times the cost on a CPU); else the whole vocabulary is sorted
    ordered, order = fast_topk(probs, min(NUCLEUS_HEAD, probs.numel()))
    if float(ordered.cumsum(0)[-1]) < top_p:
        ordered, order = probs.sort(descending=True)
    # keep a token when the mass before it is still under top_p
    keep = (ordered.cumsum(0) - ordered) < top_p
    kept = torch.zeros_like(probs)
    kept[order[keep]] = ordered[keep]
    return kept


def fast_topk(values: torch.Tensor, k: int, block: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    """`values.topk(k)` (largest first) for a 1-D tensor, about 6 times faster on a CPU over 151,936 entries.

    The k largest values lie in the k blocks with the largest maxima (a value outside them
    has k larger block maxima above it), so take the block maxima, then the top k of those k
    blocks. torch.topk scans the whole vector with a slower kernel than amax does.
    """
    whole = values.numel() - values.numel() % block  # the entries that fill whole blocks
    if k > whole // block:
        return values.topk(k)
    blocks = values[:whole].view(-1, block)
    best_blocks = blocks.amax(dim=1).topk(k).indices
    candidates = blocks[best_blocks].flatten()
    ids = (best_blocks.unsqueeze(1) * block + torch.arange(block)).flatten()
    if whole < values.numel():
        # the last, partial block is a candidate as it is
        candidates = torch.cat([candidates, values[whole:]])
        ids = torch.cat([ids, torch.arange(whole, values.numel())])
    top, where = candidates.topk(k)
    return top, ids[where]


def top_k_cut(probs: torch.Tensor, k: int) -> torch.Tensor:
    """`probs` with all but its `k` largest set to 0, renormalised (0: unchanged), as vLLM applies top_k."""
    if k <= 0 or k >= probs.numel():
        return probs
    values, where = fast_topk(probs, k)
    kept = torch.zeros_like(probs)
    kept[where] = values / values.sum()
    return kept


def draw_from(probs: torch.Tensor, settings: GenerationSettings) -> torch.Tensor:
    """What a sampled step draws from: the top-k cut (renormalised), then the top-p nucleus (not renormalised)."""
    return nucleus(top_k_cut(probs, settings.sample_top_k), settings.top_p)


def pick_token(probs: torch.Tensor, settings: GenerationSettings, generator: torch.Generator) -> int:
    """The most likely token at temperature 0; otherwise a draw from the top-k cut and top-p nucleus."""
    if settings.temperature == 0:
        return int(fast_topk(probs, 1)[1][0])
    # inverse-CDF draw: one uniform number from the seeded generator picks the token
    # (the same distribution as torch.multinomial, about 20 times faster over 151,936 ids)
    cdf = draw_from(probs, settings).double().cumsum(0)
    u = torch.rand(1, generator=generator, dtype=torch.float64) * cdf[-1]
    return int(torch.searchsorted(cdf, u, right=True).clamp(max=cdf.numel() - 1))


def top_alternatives(
    probs: torch.Tensor, k: int, engine: LoadedModel, first: int | None = None, ids: torch.Tensor | None = None
) -> list[Alternative]:
    """The k most likely tokens, most likely first; `first` goes first among tokens tied with it.

    `ids`, when given, names the token of each entry of `probs` (a distribution over allowed ids only).
    """
    if k == 0:
        return []
    values, where = fast_topk(probs, min(k, probs.numel()))
    found = (where if ids is None else ids[where]).tolist()
    rows = list(zip(found, values.tolist(), strict=True))
    if first is not None and rows[0][0] != first:
        tied = [r for r in rows if r[0] == first and r[1] == rows[0][1]]
        if tied:
            rows = tied + [r for r in rows if r[0] != first]
    return [Alternative(i, engine.tokenizer.token_text(i), p) for i, p in rows]


def failure_message(error: BaseException | None, index: int, info: ModelInfo) -> str:
    """What went wrong at step `index` and what to do; `error` None means the logits were NaN."""
    rest = "The model is still loaded and the next run starts afresh."
    if error is None:
        return (
            f"the model's output at step {index} is not a number (NaN): its weights may be damaged. {rest} "
            f"If it happens again, download {info.name} again (python -m engine download --model {info.name})."
        )
    what = f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:200]}"
    if isinstance(error, MemoryError) or "out of memory" in str(error).lower():
        return (
            f"the model ran out of memory at step {index} ({what}). {rest} Try fewer new tokens, a shorter "
            f"conversation, or a smaller model (QWEN_MODEL)."
        )
    return (
        f"the model failed at step {index} ({what}). {rest} If it fails again, its weights may be damaged: "
        f"download {info.name} again (python -m engine download --model {info.name})."
    )


# -- the loop ---------------------------------------------------------------------------------
@dataclass
class Pick:
    """One step's choice: the token, its probability, the alternatives shown, and what the mask changed."""

    id: int
    p: float
    top: list[Alternative]
    allowed: int | None  # how many ids the mask allowed (None: no mask)
    # the model's own view under a mask, where asked: p without the mask, the forbidden mass, its own top
    unmasked: tuple[float, float, list[Alternative]] | None


def start_turn(engine: LoadedModel, prompt_ids: list[int], settings: GenerationSettings):
    """The forward to run (the compact one on a CPU Qwen3, else the model), a cache for this turn, and how many
    prompt tokens it holds already (copied from the longest prefix an earlier run kept, and the prompt read
    but its last token where the prefix cache is used)."""
    model, device = engine.model, engine.device
    # a CPU Qwen3 runs through the compact forward, with its own preallocated cache (engine/model/fast_forward.py)
    fast = fast_forward_for(engine)
    forward = model if fast is None else fast
    capacity = len(prompt_ids) + settings.max_new_tokens
    context = getattr(model.config, "max_position_embeddings", None)
    if isinstance(context, int) and capacity > context:
        raise BadInput(
            f"the prompt's {len(prompt_ids):,} tokens and max_new_tokens {settings.max_new_tokens:,} make "
            f"{capacity:,}, past {engine.info.name}'s context of {context:,} tokens: ask for at most "
            f"{max(context - len(prompt_ids), 0):,} new tokens"
        )
    make_cache = None if fast is None else (lambda layers, length: fast.new_cache(capacity, layers, length))
    # start from a copy of the longest prompt prefix an earlier run kept, and read only the rest
    kept = prefix_cache_for(engine) if settings.reuse_prefix else None
    if kept is not None:
        cache, reused = kept.lookup(prompt_ids, model.config, make_cache)
    else:
        cache, reused = (transformers_cache(model) if fast is None else fast.new_cache(capacity)), 0
    if kept is not None and reused < len(prompt_ids) - 1:
        # read the prompt but its last token and keep that: a rerun of this prompt then starts exactly
        # where this run stands, and both read the last token alone, so they give the same numbers to the bit
        try:
            with engine.lock, torch.no_grad():
                forward(input_ids=torch.tensor([prompt_ids[reused:-1]], device=device), cache=cache, logits_to_keep=1)
        except Exception as error:  # the lock is released already; this run's cache is dropped with it
            raise GenerationFailed(failure_message(error, 0, engine.info)) from error
        kept.store(prompt_ids[:-1], cache)
        reused = len(prompt_ids) - 1
    return forward, cache, reused


def next_logits(engine: LoadedModel, forward, feed: torch.Tensor, cache, index: int) -> torch.Tensor:
    """The last position's logits after `feed`, as fp32 on the CPU with the padding ids at -inf; a forward that
    fails or gives NaN is a GenerationFailed saying so."""
    try:
        with engine.lock, torch.no_grad():
            out = forward(input_ids=feed, cache=cache, logits_to_keep=1)
    except Exception as error:  # the lock is released already; this run's cache is dropped with it
        raise GenerationFailed(failure_message(error, index, engine.info)) from error
    logits = out.logits[0, -1].float().cpu()
    # a sum is NaN when some logit is (or both infinities are there): one reduction, then the exact check
    if torch.isnan(logits[:REAL_VOCAB].sum()) and torch.isnan(logits[:REAL_VOCAB]).any():
        raise GenerationFailed(failure_message(None, index, engine.info))
    # the padding rows are not tokens: never shown, never chosen
    logits[REAL_VOCAB:] = float("-inf")
    return logits


def choose(
    engine: LoadedModel,
    logits: torch.Tensor,
    mask,
    index: int,
    settings: GenerationSettings,
    generator: torch.Generator,
) -> Pick:
    """One step's token from `logits` under `mask` (None: no constraint), with what a page shows of it."""
    scale = settings.temperature if settings.temperature > 0 else 1.0
    greedy = settings.temperature == 0
    if mask is None:
        # x / 1.0 is x to the bit: no pass over the vocabulary for it
        probs = torch.softmax(logits if scale == 1.0 else logits / scale, dim=-1)
        chosen = pick_token(probs, settings, generator)
        p = float(probs[chosen])
        return Pick(chosen, p, top_alternatives(probs, settings.top_k, engine, chosen if greedy else None), None, None)
    # only the allowed tokens take part: pick, probability and top-k all come from them
    scaled = logits / scale
    dist = masked_distribution(scaled, mask, index, keep_scaled=settings.model_view)
    where = pick_token(dist.probs, settings, generator)
    chosen = dist.token(where)
    p = float(dist.probs[where])
    top = top_alternatives(dist.probs, settings.top_k, engine, chosen if greedy else None, dist.ids)
    unmasked = None
    if settings.model_view:
        unmasked = what_the_model_wanted(scaled, dist.log_total, chosen, settings.top_k, engine)
    return Pick(chosen, p, top, dist.allowed, unmasked)


def stream_steps(
    engine: LoadedModel,
    prompt_ids: list[int],
    settings: GenerationSettings | None = None,
    constraint: Constraint | None = None,
) -> Iterator[DecodeStep]:
    """Generate one turn after `prompt_ids`, yielding each DecodeStep as soon as its token is chosen.

    The last step has `finish` set. The engine's lock is held for each forward pass only, so
    two users' generations interleave step by step but never mix: each has its own cache and
    its own random generator. An abandoned stream holds nothing.
    """
    settings = settings or GenerationSettings()
    settings.check()
    if not prompt_ids:
        raise BadInput("the prompt is empty: render a request first (engine.core.prompt.render)")
    generator = torch.Generator(device="cpu").manual_seed(settings.seed)
    prompt_ids = list(prompt_ids)
    forward, cache, reused = start_turn(engine, prompt_ids, settings)
    utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
    feed = torch.tensor([prompt_ids[reused:]], device=engine.device)
    for index in range(settings.max_new_tokens):
        logits = next_logits(engine, forward, feed, cache, index)
        mask = None
        if constraint is not None:
            mask = constraint.next_packed() if hasattr(constraint, "next_packed") else constraint.next_mask()
        pick = choose(engine, logits, mask, index, settings, generator)
        if constraint is not None:
            constraint.accept(pick.id)
        stop = pick.id in settings.stop_ids
        finish = "stop" if stop else ("length" if index == settings.max_new_tokens - 1 else None)
        text = utf8.decode(b"" if stop else engine.tokenizer.token_bytes(pick.id), final=finish is not None)
        unmasked = pick.unmasked
        yield DecodeStep(
            index=index,
            id=pick.id,
            token=engine.tokenizer.token_text(pick.id),
            text=text,
            p=pick.p,
            top=pick.top,
            allowed=pick.allowed,
            p_unmasked=None if unmasked is None else unmasked[0],
            forbidden_mass=None if unmasked is None else unmasked[1],
            top_unmasked=None if unmasked is None else unmasked[2],
            finish=finish,
        )
        if finish is not None:
            return
        feed = torch.tensor([[pick.id]], device=engine.device)


def generate(
    engine: LoadedModel,
    prompt,
    settings: GenerationSettings | None = None,
    constraint: Constraint | None = None,
    on_step: Callable[[DecodeStep], None] | None = None,
) -> Generation:
    """Generate one turn and return it whole; `on_step` sees each step as it comes (to draw it live).

    `prompt` is an engine.core.prompt.Prompt, or a list of token ids.
    """
    settings = settings or GenerationSettings()
    ids = list(getattr(prompt, "ids", prompt))
    started = time.perf_counter()
    first = 0.0
    steps: list[DecodeStep] = []
    for step in stream_steps(engine, ids, settings, constraint):
        if not steps:
            first = time.perf_counter() - started
        steps.append(step)
        if on_step is not None:
            on_step(step)
    return Generation(
        text="".join(s.text for s in steps),
        finish=steps[-1].finish or "length",
        steps=steps,
        prompt_tokens=len(ids),
        model=engine.info,
        settings=settings,
        prompt_text=getattr(prompt, "text", None),
        seconds=time.perf_counter() - started,
        first_token_seconds=first,
    )


def transformers_cache(model):
    """An empty cache for transformers' own forward (a model the compact forward does not cover)."""
    from transformers import DynamicCache

    return DynamicCache(config=model.config)
