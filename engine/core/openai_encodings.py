"""OpenAI's tiktoken encodings (o200k_base, cl100k_base), read from the vendored files: no network, no cache folder.

The files are tiktoken's own, vendored in assets/openai-encodings/ (see its PROVENANCE.md) and
checked against the sha256 tiktoken pins; the pattern and special tokens are those of tiktoken
0.14's `tiktoken_ext/openai_public.py`. `tiktoken.get_encoding` is never called, because it
downloads the file. gpt-oss's tokenizer (engine.core.call_formats.gpt_oss) and the estimate of
OpenAI's prompt cost (engine.wire.openai_tokens) both read them here.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import lru_cache

from ..errors import BadInput
from ..settings import ASSETS

ENCODINGS_DIR = ASSETS / "openai-encodings"

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"


@dataclass(frozen=True)
class EncodingSpec:
    """One of OpenAI's encodings as tiktoken_ext/openai_public.py defines it."""

    name: str
    file: str  # in assets/openai-encodings/
    sha256: str  # the expected_hash tiktoken pins for the official download
    pat_str: str
    special_tokens: dict


ENCODING_SPECS = {
    "cl100k_base": EncodingSpec(
        "cl100k_base",
        "cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260, ENDOFPROMPT: 100276},
    ),
    "o200k_base": EncodingSpec(
        "o200k_base",
        "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        {ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    ),
}


@lru_cache(maxsize=2)
def load_openai_encoding(name: str):
    """An OpenAI encoding built from the vendored file: no network, no cache folder."""
    import tiktoken

    if name not in ENCODING_SPECS:
        raise BadInput(f"unknown encoding {name!r}; the vendored ones are {', '.join(ENCODING_SPECS)}")
    spec = ENCODING_SPECS[name]
    path = ENCODINGS_DIR / spec.file
    if not path.is_file():
        raise BadInput(f"the encoding file {spec.file} is missing from assets/openai-encodings/; restore it from git")
    # the same sha256 that tiktoken pins for the official file
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise BadInput(f"{spec.file} does not match tiktoken's pinned sha256; restore it from git")
    # the file format is one "base64-token rank" pair per line (tiktoken.load.load_tiktoken_bpe
    # reads it the same way); reading it here needs no cache folder and no change to the environment
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}
    return tiktoken.Encoding(name, pat_str=spec.pat_str, mergeable_ranks=ranks, special_tokens=spec.special_tokens)
