"""The Qwen3 tokenizer, offline: exact token ids and the model's own chat template, without torch.

Loads the vendored `assets/qwen3-tokenizer/` (or another id or folder on request) with the
Rust `tokenizers` library that transformers itself wraps, and renders prompts in transformers'
own jinja2 sandbox (chat_render.py) over the template shipped in `tokenizer_config.json`,
so counts equal `AutoTokenizer.apply_chat_template` byte for byte (tests check it). A model
folder's files are size-checked before they are read (model_files.py), and its own template,
unlike the site's, renders in a child process under a time and memory limit (template_guard.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelFolderRefused, TemplateRefused, TokenizerUnavailable
from ..settings import VENDORED_TOKENIZER, load_settings
from .chat_render import render_template
from .model_files import check_folder_files, check_template, model_name_problem, model_path, read_folder_text
from .template_guard import is_known, probe_request, problem_of, render_guarded

# single-token ids of the Qwen3 vocabulary that the lessons talk about
REAL_VOCAB = 151669  # ids the tokenizer knows (151,643 ordinary tokens, then the special ones)
MODEL_VOCAB = 151936  # rows of every Qwen3 embedding and output matrix; ids >= REAL_VOCAB are padding, never tokens
IM_END = 151645
END_OF_TEXT = 151643
TOOL_CALL = 151657
TOOL_CALL_END = 151658
THINK = 151667  # <think>
THINK_END = 151668  # </think>


def show_token_bytes(raw: bytes) -> str:
    """A token's bytes as text, or as <0xNN> for each byte of a character it splits (any tokenizer's)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(chr(b) if b < 0x80 else f"<0x{b:02X}>" for b in raw)


@dataclass(frozen=True)
class TokenPiece:
    """One token of a text: its id, the text it covers and where."""

    id: int
    text: str  # the token shown on its own (bytes of a split character as <0xNN>)
    start: int
    end: int
    special: bool


@functools.lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    # the GPT-2 byte-to-unicode table that byte-level BPE vocabularies are written in
    printable = (
        list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    )
    codes = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, codes)}


def piece_bytes(piece: str | None, special: bool) -> bytes:
    """The bytes a byte-level BPE vocabulary entry stands for: a special token's text is its own bytes,
    any other entry is written in the GPT-2 byte-to-unicode table (None, an id past the vocabulary: no bytes)."""
    if piece is None:
        return b""
    if special:
        return piece.encode("utf-8")
    # in C: each table character becomes the character of its byte's code, then latin-1 writes those codes as bytes
    # (a character outside the table, which no such entry holds, raises KeyError as the table itself would)
    if not _OUTSIDE_TABLE.search(piece):
        try:
            return piece.translate(_to_byte_codes()).encode("latin-1")
        except UnicodeEncodeError:
            pass
    table = _byte_decoder()
    return bytes(table[c] for c in piece)


# the characters of codes below 256 that the byte-to-unicode table writes as another character (a space is "Ġ")
_OUTSIDE_TABLE = re.compile("[\x00-\x20\x7f-\xa0\xad]")


@functools.lru_cache(maxsize=1)
def _to_byte_codes() -> dict[int, int]:
    return {ord(c): b for c, b in _byte_decoder().items()}


class QwenTokenizer:
    """Exact Qwen3 token ids and chat-template rendering."""

    def __init__(self, folder: Path, source: str):
        from tokenizers import Tokenizer

        self.folder = folder
        self.source = source
        try:
            # each file is checked for its size (and links out of the folder) before a byte of it is read
            self._tok = _vocabulary(folder, read_folder_text(folder, "tokenizer.json"), Tokenizer)
            config = json.loads(read_folder_text(folder, "tokenizer_config.json"))
        except ModelFolderRefused:
            raise
        except (OSError, ValueError, Exception) as error:  # tokenizers raises its own Exception type
            raise TokenizerUnavailable(
                f"could not read the tokenizer in {folder}: {error}. "
                "It needs tokenizer.json and tokenizer_config.json (see assets/qwen3-tokenizer/PROVENANCE.md)."
            ) from error
        template = config.get("chat_template") if isinstance(config, dict) else None
        if not isinstance(template, str):
            try:
                template = read_folder_text(folder, "chat_template.jinja")
            except FileNotFoundError:
                template = None
        if template is None:
            raise TokenizerUnavailable(f"{folder} has no chat template (tokenizer_config.json or chat_template.jinja)")
        self.chat_template: str = check_template(template)
        # the site's own templates render here; a folder's own renders in a child under a time and memory limit
        self.template_known: bool = is_known(template)
        self.vocab_size: int = self._tok.get_vocab_size(with_added_tokens=True)
        self._special = {t.id for t in self._added_tokens() if t.special}

    def _added_tokens(self):
        return [_Added(int(i), t.content, t.special) for i, t in self._tok.get_added_tokens_decoder().items()]

    def control_texts(self) -> list[str]:
        """The text of every added token: each is one id wherever a text holds it (engine.core.control_text)."""
        return [t.content for t in self._added_tokens()]

    # -- ids ------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """The token ids of `text`; special tokens written in the text are single ids."""
        return self._tok.encode(text, add_special_tokens=False).ids

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=False)

    def token_id(self, token: str) -> int:
        """The id of a token written as the vocabulary spells it (`<tool_call>`, `Ġstrawberry`)."""
        found = self._tok.token_to_id(token)
        if found is None:
            raise KeyError(f"{token!r} is not a single token of this vocabulary")
        return found

    def is_special(self, token_id: int) -> bool:
        return token_id in self._special

    def token_bytes(self, token_id: int) -> bytes:
        """The exact bytes one token stands for (a token may hold part of a UTF-8 character)."""
        # from <|endoftext|> on, ids are special tokens: their text is the bytes themselves
        return piece_bytes(self._tok.id_to_token(token_id), token_id in self._special or token_id >= END_OF_TEXT)

    def token_text(self, token_id: int) -> str:
        """One token shown on its own: its text, or its bytes as <0xNN> where it splits a character."""
        return show_token_bytes(self.token_bytes(token_id))

    def encode_and_show_work(self, text: str) -> list[TokenPiece]:
        """Every token of `text` with the characters it covers, in order."""
        enc = self._tok.encode(text, add_special_tokens=False)
        return [TokenPiece(i, self.token_text(i), s, e, i in self._special) for i, (s, e) in zip(enc.ids, enc.offsets)]

    # -- chat template --------------------------------------------------------------------
    def render_chat(
        self,
        messages: list[dict],
        tools: list[dict] | None = None,
        add_generation_prompt: bool = True,
        enable_thinking: bool = False,
    ) -> str:
        """The prompt text exactly as `apply_chat_template(..., tokenize=False)` writes it.

        A model folder's own template renders in a child process under a time and memory limit,
        every time (engine/core/template_guard.py); TemplateRefused once it goes past one."""
        if not self.template_known:
            return render_guarded(
                self.chat_template,
                messages,
                tools or None,
                add_generation_prompt=add_generation_prompt,
                enable_thinking=enable_thinking,
            )
        # a template the site ships: the same jinja2 sandbox as transformers', without importing transformers
        return render_template(
            self.chat_template,
            messages,
            tools or None,
            add_generation_prompt=add_generation_prompt,
            enable_thinking=enable_thinking,
        )

    @property
    def template_problem(self) -> str | None:
        """Why this folder's template is unusable (it went past a limit as it rendered), or None."""
        return None if self.template_known else problem_of(self.chat_template)

    def check_template(self) -> None:
        """TemplateRefused, in one line, when the folder's own template cannot render a plain conversation with tools
        within its limits (a model's load asks once; every later render is limited anyway)."""
        if self.template_known:
            return
        messages, tools = probe_request()
        try:
            self.render_chat(messages, tools)
        except TemplateRefused:
            raise
        except Exception as error:  # the template's own failure: jinja2's errors, a TypeError from a filter
            last = (str(error).strip().splitlines() or [type(error).__name__])[-1][:200]
            raise TemplateRefused(
                f"the model folder's chat template is unusable: it fails on a plain conversation with tools: {last}"
            ) from None


@dataclass(frozen=True)
class _Added:
    id: int
    content: str
    special: bool


def _resolve_folder(source: str, cache_only: bool = False) -> Path:
    path = model_path(source)
    if path.is_dir():
        return path
    # a hub id: take its tokenizer files from the local cache, or download them when online (unless `cache_only`:
    # offline, huggingface_hub retries for about 25 s before it gives up)
    try:
        from huggingface_hub import hf_hub_download, try_to_load_from_cache

        if cache_only:
            # read the cache alone: even with local_files_only, hf_hub_download builds headers that look online
            found = [try_to_load_from_cache(source, name) for name in ("tokenizer_config.json", "tokenizer.json")]
            if not all(isinstance(path, str) for path in found):
                raise FileNotFoundError("not in the Hugging Face cache")
            return Path(found[0]).parent
        config = hf_hub_download(source, "tokenizer_config.json")
        hf_hub_download(source, "tokenizer.json")
        return Path(config).parent
    except Exception as error:  # offline, unknown id, no cache: all mean "not here"
        raise TokenizerUnavailable(
            f"no tokenizer for {source!r}: it is not a local folder and could not be loaded from the "
            f"Hugging Face cache or hub ({type(error).__name__}). Unset QWEN_MODEL to use the vendored Qwen3 tokenizer."
        ) from error


def _vocabulary(folder: Path, text: str, tokenizer_type):
    """tokenizers' Tokenizer read from a folder's tokenizer.json `text`: the vendored tokenizer's own object where the
    text is the vendored file's, byte for byte (every Qwen3 size ships it; parsing its 11 MB of JSON takes 0.6 s)."""
    if Path(folder).resolve() != VENDORED_TOKENIZER.resolve():
        if hashlib.sha256(text.encode("utf-8")).hexdigest() == _vendored_vocabulary_digest():
            return vendored_tokenizer()._tok
    return tokenizer_type.from_str(text)


@functools.lru_cache(maxsize=1)
def _vendored_vocabulary_digest() -> str:
    return hashlib.sha256(read_folder_text(VENDORED_TOKENIZER, "tokenizer.json").encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=1)
def vendored_tokenizer() -> QwenTokenizer:
    """The vendored Qwen3 tokenizer, one per process whichever way it is asked for (by no name, by its folder, or
    for a model folder without tokenizer files, such as the shipped model's): reading its 11 MB of JSON takes
    0.6 s, and every Qwen3 size shares it."""
    return QwenTokenizer(VENDORED_TOKENIZER, "vendored Qwen3 tokenizer (assets/qwen3-tokenizer)")


@functools.lru_cache(maxsize=4)
def load_tokenizer(source: str | None = None) -> QwenTokenizer:
    """The tokenizer, loaded once per source: the vendored Qwen3 one unless `source` names another.

    With no argument, a QWEN_MODEL that names a local folder holding tokenizer files, or a
    hub id whose files are cached, overrides the vendored copy; every Qwen3 size shares one
    tokenizer, so a Qwen3 id that is not cached falls back to the vendored files. A name that can
    be neither a folder nor a hub id names no tokenizer: the vendored one serves the lessons, and
    the model's status line says why the name is refused.
    """
    if source is None:
        override = load_settings().tokenizer
        if override and model_name_problem(override) is None:
            qwen3 = override.split("/")[-1].lower().startswith("qwen3")
            try:
                # a Qwen3 id's tokenizer is the vendored one: read from the cache if there, never waited for online
                if qwen3 and not model_path(override).is_dir():
                    return QwenTokenizer(_resolve_folder(override, cache_only=True), override)
                return load_tokenizer(override)
            except TokenizerUnavailable:
                if not qwen3:
                    raise
        return vendored_tokenizer()
    folder = _resolve_folder(source)
    if folder.resolve() == VENDORED_TOKENIZER.resolve():
        return vendored_tokenizer()
    return QwenTokenizer(folder, source)


@functools.lru_cache(maxsize=2)
def load_hf_tokenizer(folder: str | None = None):
    """The transformers tokenizer over the same files (imports torch; for the live model and xgrammar)."""
    from transformers import AutoTokenizer

    folder = folder or str(load_tokenizer().folder)
    # transformers opens the files by path: each is checked for its size first
    check_folder_files(Path(folder))
    return AutoTokenizer.from_pretrained(folder, local_files_only=True)
