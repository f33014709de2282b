"""The vendored tokenizer against transformers' own AutoTokenizer over the same files."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.core.tokenizer import IM_END, TOOL_CALL, load_tokenizer

CORPUS = [
    "How many times does the letter r appear in strawberry?",
    " strawberry",
    "strawberry",
    'def add(a, b):\n    """Return the sum."""\n    return a + b\n',
    '{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}',
    '<tool_call>\n{"name": "x"}\n</tool_call><|im_end|>',
    "Ünïcödé — naïve café, 東京, Ελληνικά, русский, العربية",
    "emoji 🍓🍓 👩‍👩‍👧 ✨",
    "spaces   and\ttabs\n\n\n  trailing   ",
    "",
    "e\u0301 combining marks a\u0308\u0301",
]


@pytest.fixture(scope="module")
def hf():
    from engine.core.tokenizer import load_hf_tokenizer

    return load_hf_tokenizer()


def test_vocabulary_size_and_special_ids():
    tok = load_tokenizer()
    assert tok.vocab_size == 151669
    assert tok.token_id("<tool_call>") == TOOL_CALL == 151657
    assert tok.token_id("<|im_end|>") == IM_END == 151645
    assert tok.encode("<tool_call>") == [151657]


def test_strawberry_with_its_space_is_one_token():
    tok = load_tokenizer()
    assert tok.encode(" strawberry") == [72600]
    assert tok.token_text(72600) == " strawberry"
    assert len(tok.encode("strawberry")) == 3


@pytest.mark.parametrize("text", CORPUS)
def test_ids_equal_transformers(hf, text):
    assert load_tokenizer().encode(text) == hf.encode(text, add_special_tokens=False)


def test_pieces_rebuild_the_text_bytes():
    import unicodedata

    tok = load_tokenizer()
    for text in CORPUS:
        pieces = tok.encode_and_show_work(text)
        # Qwen3 normalizes to NFC before splitting, so combining marks come back composed
        assert b"".join(tok.token_bytes(p.id) for p in pieces) == unicodedata.normalize("NFC", text).encode("utf-8")


def test_split_character_is_shown_as_bytes():
    tok = load_tokenizer()
    ids = tok.encode("𓀀")  # an Egyptian hieroglyph: no token holds all four of its bytes
    assert len(ids) > 1
    assert all(tok.token_text(i).startswith("<0x") for i in ids)


def test_counting_tokens_does_not_import_torch():
    code = (
        "import sys\n"
        "from engine.core.prompt import Request, render\n"
        "from engine.core.tooldefs import load_tool_set\n"
        "render(Request([{'role': 'user', 'content': 'hi'}], load_tool_set('strawberry')))\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_folder_explains_itself(tmp_path):
    from engine.core.tokenizer import QwenTokenizer
    from engine.errors import TokenizerUnavailable

    with pytest.raises(TokenizerUnavailable, match="tokenizer.json"):
        QwenTokenizer(tmp_path, "empty")


def test_a_model_folders_template_with_nested_loops_is_refused_within_its_time_limit(tmp_path, monkeypatch):
    """A template that would hang every render (nested loops) renders in a limited child process and is refused."""
    import json as json_module
    import shutil
    from dataclasses import replace

    from engine.core import template_guard
    from engine.core import tokenizer as tokenizer_module
    from engine.errors import TokenizerUnavailable
    from engine.settings import VENDORED_TOKENIZER

    folder = tmp_path / "model"
    shutil.copytree(VENDORED_TOKENIZER, folder)
    config = json_module.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}x"
    (folder / "tokenizer_config.json").write_text(json_module.dumps(config), encoding="utf-8")
    monkeypatch.setattr(template_guard, "LIMITS", replace(template_guard.LIMITS, seconds=3.0))
    slow = tokenizer_module.QwenTokenizer(folder, str(folder))
    with pytest.raises(TokenizerUnavailable, match="did not render within 3 s"):
        slow.render_chat([{"role": "user", "content": "hi"}])
    # a template that renders quickly is used as it is
    config["chat_template"] = "{% for m in messages %}{{ m.content }}{% endfor %}"
    (folder / "tokenizer_config.json").write_text(json_module.dumps(config), encoding="utf-8")
    assert tokenizer_module.QwenTokenizer(folder, str(folder)).render_chat([{"role": "user", "content": "hi"}]) == "hi"


def test_a_qwen3_hub_id_not_in_the_cache_gives_the_vendored_tokenizer_without_asking_the_network(monkeypatch, tmp_path):
    """Offline, huggingface_hub retries a lookup for about 25 s: a teacher with QWEN_MODEL=Qwen/Qwen3-1.7B set and
    nothing cached would wait that long for a tokenizer the site ships. No connection is tried at all."""
    import socket

    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("QWEN_MODEL", "Qwen/Qwen3-1.7B")
    tried: list[object] = []

    def refuse(*args, **kwargs):
        tried.append(args)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    load_tokenizer.cache_clear()
    try:
        tok = load_tokenizer()
        assert tok.folder.name == "qwen3-tokenizer" and "vendored" in tok.source
        assert tried == []
        assert tok.encode(" strawberry") == [72600]
    finally:
        load_tokenizer.cache_clear()


def test_the_vendored_tokenizer_is_read_once_however_it_is_asked_for(monkeypatch):
    """By no name, by its folder, or for a model folder without tokenizer files (the shipped model's): one object,
    so a server that has read it for its pages does not read its 11 MB again for the model."""
    from engine.core.tokenizer import vendored_tokenizer
    from engine.errors import TokenizerUnavailable
    from engine.settings import BUILTIN_FOLDER, VENDORED_TOKENIZER

    monkeypatch.delenv("QWEN_MODEL", raising=False)
    monkeypatch.delenv("QWEN_TOKENIZER", raising=False)
    load_tokenizer.cache_clear()
    try:
        shared = vendored_tokenizer()
        assert load_tokenizer() is shared and load_tokenizer(str(VENDORED_TOKENIZER)) is shared
        with pytest.raises(TokenizerUnavailable):
            load_tokenizer(str(BUILTIN_FOLDER))  # no tokenizer files there: the loader then takes the vendored one
    finally:
        load_tokenizer.cache_clear()


def test_the_shipped_model_shares_the_pages_tokenizer():
    from engine.core.tokenizer import vendored_tokenizer
    from engine.model.loading import load_model
    from engine.settings import BUILTIN

    assert load_model(BUILTIN).tokenizer is vendored_tokenizer()


def test_a_folder_with_the_vendored_vocabulary_shares_its_parsed_object_and_keeps_its_own_template(tmp_path):
    """Every Qwen3 size ships the same tokenizer.json: a folder holding it byte for byte reuses the vendored
    tokenizer's parsed vocabulary (0.6 s of JSON), while its own tokenizer_config.json still gives its template."""
    import json
    import shutil

    from engine.core.tokenizer import QwenTokenizer, vendored_tokenizer
    from engine.settings import VENDORED_TOKENIZER

    same, other = tmp_path / "same", tmp_path / "other"
    for folder in (same, other):
        shutil.copytree(VENDORED_TOKENIZER, folder)
    config = json.loads((same / "tokenizer_config.json").read_text())
    config["chat_template"] = "{{ messages[0]['content'] }}"
    (same / "tokenizer_config.json").write_text(json.dumps(config))
    vocabulary = json.loads((other / "tokenizer.json").read_text())
    (other / "tokenizer.json").write_text(json.dumps(vocabulary, indent=1))  # the same vocabulary, other bytes
    shared, parsed = QwenTokenizer(same, "same"), QwenTokenizer(other, "other")
    assert shared._tok is vendored_tokenizer()._tok and parsed._tok is not vendored_tokenizer()._tok
    assert shared.chat_template == "{{ messages[0]['content'] }}" != vendored_tokenizer().chat_template
    assert shared.encode(" strawberry") == parsed.encode(" strawberry") == [72600]


# -- a vocabulary entry's bytes ------------------------------------------------------------------------
def _bytes_by_table(piece: str) -> bytes:
    from engine.core.tokenizer import _byte_decoder

    return bytes(_byte_decoder()[c] for c in piece)


def test_every_vocabulary_entry_s_bytes_are_the_byte_table_s():
    from engine.core.tokenizer import piece_bytes

    tok = load_tokenizer()
    vocab = tok._tok.get_vocab(with_added_tokens=False)
    assert len(vocab) == 151_643
    assert all(piece_bytes(piece, False) == _bytes_by_table(piece) for piece in vocab)


@given(
    st.text(alphabet=st.sampled_from([*"ĠĊčabc¡ÿĀłŃ", " ", "\x00", "\xad", "\x7f", "\xa0", "é", "中", "ÿ"]), max_size=8)
)
def test_a_piece_s_bytes_equal_the_table_s_or_both_refuse_it(piece):
    from engine.core.tokenizer import piece_bytes

    try:
        expected = _bytes_by_table(piece)
    except KeyError:
        with pytest.raises(KeyError):
            piece_bytes(piece, False)
    else:
        assert piece_bytes(piece, False) == expected
