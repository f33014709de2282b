"""The Qwen3 tokenizer, offline: exact token ids and the model's own chat template, without torch.

Loads the vendored `assets/qwen3-tokenizer/` (or another id or folder on request) with the
Rust `tokenizers` library that transformers itself wraps, and renders prompts with
transformers' own Jinja renderer over the template shipped in `tokenizer_config.json`,
so counts equal `AutoTokenizer.apply_chat_template` byte for byte (tests check it).
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import TokenizerUnavailable
from ..settings import VENDORED_TOKENIZER, load_settings

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
    table = _byte_decoder()
    return bytes(table[c] for c in piece)


class QwenTokenizer:
    """Exact Qwen3 token ids and chat-template rendering."""

    def __init__(self, folder: Path, source: str):
        from tokenizers import Tokenizer

        self.folder = folder
        self.source = source
        try:
            self._tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
            config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, Exception) as error:  # tokenizers raises its own Exception type
            raise TokenizerUnavailable(
                f"could not read the tokenizer in {folder}: {error}. "
                "It needs tokenizer.json and tokenizer_config.json (see assets/qwen3-tokenizer/PROVENANCE.md)."
            ) from error
        template = config.get("chat_template")
        if not isinstance(template, str):
            jinja = folder / "chat_template.jinja"
            template = jinja.read_text(encoding="utf-8") if jinja.exists() else None
        if template is None:
            raise TokenizerUnavailable(f"{folder} has no chat template (tokenizer_config.json or chat_template.jinja)")
        self.chat_template: str = template
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
        """The prompt text exactly as `apply_chat_template(..., tokenize=False)` writes it."""
        from transformers.utils.chat_template_utils import render_jinja_template

        if Path(self.folder).resolve() != Path(VENDORED_TOKENIZER).resolve():
            check_template_time(self.chat_template)
        rendered, _ = render_jinja_template(
            conversations=[messages],
            tools=tools or None,
            chat_template=self.chat_template,
            add_generation_prompt=add_generation_prompt,
            enable_thinking=enable_thinking,
        )
        return rendered[0]


# a model folder's template is code from outside: before it renders in the server it must render a
# probe request (more messages and tools than a lesson has) in a child process within this time
TEMPLATE_SECONDS = 10.0
_TEMPLATES_CHECKED: dict[str, str | None] = {}
PROBE_SCRIPT = """
import json, sys
from transformers.utils.chat_template_utils import render_jinja_template
print("ready", flush=True)
probe = json.loads(sys.stdin.read())
render_jinja_template(conversations=[probe["messages"]], tools=probe["tools"], chat_template=probe["template"],
                      add_generation_prompt=True, enable_thinking=False)
print("ok")
"""


def check_template_time(template: str) -> None:
    """A TokenizerUnavailable when `template` does not render a probe request within TEMPLATE_SECONDS (checked once)."""
    key = hashlib.sha256(template.encode("utf-8", "surrogatepass")).hexdigest()
    if key not in _TEMPLATES_CHECKED:
        tool = {
            "type": "function",
            "function": {
                "name": "probe",
                "description": "d",
                "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
            },
        }
        messages = [{"role": "system", "content": "s"}] + [
            {"role": "user" if n % 2 == 0 else "assistant", "content": f"message {n}"} for n in range(16)
        ]
        probe = json.dumps({"template": template, "messages": messages, "tools": [tool] * 8})
        child = subprocess.Popen(
            [sys.executable, "-c", PROBE_SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # the clock starts once the child has imported the renderer: only the template is timed
            child.stdout.readline()
            out, err = child.communicate(probe, timeout=TEMPLATE_SECONDS)
            problem = (
                None
                if out.strip() == "ok"
                else (f"it fails on a plain conversation: {(err.strip().splitlines() or ['no message'])[-1][:200]}")
            )
        except subprocess.TimeoutExpired:
            problem = (
                f"it did not render a 17-message conversation within {TEMPLATE_SECONDS:g} s "
                "(nested loops?), so the server will not run it"
            )
        finally:
            child.kill()
            child.wait()
        _TEMPLATES_CHECKED[key] = problem
    problem = _TEMPLATES_CHECKED[key]
    if problem:
        raise TokenizerUnavailable(f"the model folder's chat template cannot be used: {problem}")


@dataclass(frozen=True)
class _Added:
    id: int
    content: str
    special: bool


def _resolve_folder(source: str) -> Path:
    path = Path(source).expanduser()
    if path.is_dir():
        return path
    # a hub id: take its tokenizer files from the local cache, or download them when online
    try:
        from huggingface_hub import hf_hub_download

        config = hf_hub_download(source, "tokenizer_config.json")
        hf_hub_download(source, "tokenizer.json")
        return Path(config).parent
    except Exception as error:  # offline, unknown id, no cache: all mean "not here"
        raise TokenizerUnavailable(
            f"no tokenizer for {source!r}: it is not a local folder and could not be loaded from the "
            f"Hugging Face cache or hub ({type(error).__name__}). Unset QWEN_MODEL to use the vendored Qwen3 tokenizer."
        ) from error


@functools.lru_cache(maxsize=4)
def load_tokenizer(source: str | None = None) -> QwenTokenizer:
    """The tokenizer, loaded once per source: the vendored Qwen3 one unless `source` names another.

    With no argument, a QWEN_MODEL that names a local folder holding tokenizer files, or a
    hub id whose files are cached, overrides the vendored copy; every Qwen3 size shares one
    tokenizer, so a Qwen3 id that is not cached falls back to the vendored files.
    """
    if source is None:
        override = load_settings().tokenizer
        if override:
            try:
                return load_tokenizer(override)
            except TokenizerUnavailable:
                if not override.split("/")[-1].lower().startswith("qwen3"):
                    raise
        return QwenTokenizer(VENDORED_TOKENIZER, "vendored Qwen3 tokenizer (assets/qwen3-tokenizer)")
    folder = _resolve_folder(source)
    if folder.resolve() == VENDORED_TOKENIZER.resolve():
        return QwenTokenizer(folder, "vendored Qwen3 tokenizer (assets/qwen3-tokenizer)")
    return QwenTokenizer(folder, source)


@functools.lru_cache(maxsize=2)
def load_hf_tokenizer(folder: str | None = None):
    """The transformers tokenizer over the same files (imports torch; for the live model and xgrammar)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder or load_tokenizer().folder), local_files_only=True)
