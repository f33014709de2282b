"""The shipped model's training: its samples are the site's own prompts, its held-out prompts stay out, its loss falls."""

from __future__ import annotations

import json
import random
import re

import pytest
from helpers import small_train_config

from engine.core.call_formats import get_format, parse_turn
from engine.core.prompt import Request, render
from engine.core.tokenizer import IM_END, load_tokenizer
from engine.train import data, drills

TOK = load_tokenizer()


def conversations(seed: int, count: int):
    rng = random.Random(seed)
    slots = data.Slots(rng, data.conversation_words(TOK))
    return [data.conversation(rng, slots) for _ in range(count)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_sample_is_the_prompt_the_site_renders_then_the_turn_and_im_end_with_the_loss_on_the_turn_alone(seed):
    for conv in conversations(seed, 40):
        sample = data.conversation_sample(conv, TOK)
        prompt = render(Request(conv.messages, conv.tools, conv.style), TOK).ids
        assert sample.ids[: len(prompt)] == prompt
        assert sample.targets == [False] * len(prompt) + [True] * (len(sample.ids) - len(prompt))
        assert sample.ids[-1] == IM_END
        assert TOK.decode(sample.ids[len(prompt) : -1]) == conv.turn


@pytest.mark.parametrize("seed", [0, 1])
def test_every_call_a_sample_teaches_parses_back_to_its_own_call_with_no_error(seed):
    for conv in conversations(seed, 60):
        # with no tool offered, the prompt has no style's instructions and the answer is plain words
        parsed = parse_turn(conv.turn, conv.tools, conv.style if conv.tools else "native")
        if conv.kind == "call":
            assert not parsed.errors, conv.turn
            assert [(c.name, c.arguments) for c in parsed.calls] == [conv.expected]
        else:
            assert parsed.final and not parsed.calls and not parsed.errors, conv.turn


def test_a_count_question_asks_for_the_word_and_letter_it_names_and_its_answer_gives_the_true_count():
    rng = random.Random(3)
    slots = data.Slots(rng, ["strawberry"])
    for _ in range(30):
        conv = data.final_conversation(rng, slots, "native")
        name, arguments = next(
            (
                m
                for m in [
                    get_format("native").written_call(b, conv.messages[1]["content"])
                    for b in parse_turn(conv.messages[1]["content"], conv.tools, "native").blocks
                ]
                if m
            ),
            (None, None),
        )
        if name != "count_letter":
            continue
        assert conv.messages[2]["content"] == str(arguments["word"].count(arguments["letter"]))
        assert conv.turn == data.count_answer(arguments["word"], arguments["letter"])


def test_no_training_conversation_names_a_held_out_word_phrasing_or_question():
    held = data.heldout_words()
    training = data.training_data()
    phrasings = [p.split("{")[0] for p in training["heldout_count_phrasings"] if not p.startswith("{")]
    facts = set(training["heldout_facts"])
    for conv in conversations(7, 600):
        question = conv.messages[0]["content"]
        words = {w.strip("?.,\"'!:") for w in question.split()}
        assert not words & held, question
        assert not any(question.startswith(p) for p in phrasings), question
        assert question not in facts


def test_count_phrasings_put_the_word_first_middle_and_last_and_are_never_a_held_out_one():
    training = data.training_data()
    held = set(training["heldout_count_phrasings"])
    prefixes = [p.split("{")[0] for p in held if not p.startswith("{")]
    rng = random.Random(5)
    made = [data.count_phrasing(rng, 0.5) for _ in range(3000)]
    assert not set(made) & held
    assert not any(m.startswith(p) for m in made for p in prefixes)
    # each names the letter and the word once, and the parts make many more than the fourteen fixed phrasings
    assert all(m.count("{letter}") == 1 and m.count("{word}") == 1 for m in made)
    assert len(set(made)) > 1000
    assert len(set(made) & set(training["count_phrasings"])) == len(training["count_phrasings"])
    # the word at the very start (no space before it, so other tokens), quoted, and last
    assert any(m.startswith("{word}") for m in made)
    assert any('"{word}"' in m for m in made)
    assert any(m.rstrip("?.!").endswith("{word}") for m in made)
    # a question that opens with the word, bare or quoted, from the frames that do, never a held-out phrasing
    first = [data.word_first_phrasing(rng) for _ in range(500)]
    assert all(m.startswith(("{word}", '"{word}"')) and m.count("{letter}") == 1 for m in first)
    assert not set(first) & held and len(set(first)) > 100
    # with no share composed, as the shipped model was trained, the draws are the fixed phrasings' own stream
    fixed, plain = random.Random(9), random.Random(9)
    assert [data.count_phrasing(fixed) for _ in range(50)] == [
        plain.choice(training["count_phrasings"]) for _ in range(50)
    ]


def test_the_drill_spells_each_word_without_its_space_and_learns_only_the_spelling():
    sample = drills.drill_sample(random.Random(0), ["strawberry"], TOK)
    assert len(sample.ids) == drills.DRILL_TOKENS
    first = TOK.encode(' strawberry → "strawberry"\n')
    assert sample.ids[: len(first)] == first
    learned = [TOK.token_text(i) for i, t in zip(sample.ids[: len(first)], sample.targets, strict=False) if t]
    assert learned == ["str", "aw", "berry", '"\n']
    candidates = set(drills.spelling_candidates(TOK))
    assert {TOK.encode("str")[0], TOK.encode('"\n')[0]} <= candidates
    assert all(i in candidates for i, t in zip(sample.ids, sample.targets, strict=True) if t)


def test_the_drill_words_are_the_vocabularys_space_words_and_include_strawberry():
    words = data.vocabulary_words(TOK)
    assert "strawberry" in words and len(words) > 20_000
    assert all(len(TOK.encode(" " + w)) == 1 for w in words[:500])


def test_a_few_training_steps_of_a_small_network_lower_the_loss(tmp_path):
    pytest.importorskip("torch")
    from engine.train.training import train

    config = small_train_config(steps=24, warmup=4, pool=64, log_every=6)
    result = train(config, tmp_path / "small", TOK)
    first, last = result.curve[0]["loss"], result.curve[-1]["loss"]
    assert last < first - 1.0, result.curve
    saved = json.loads((tmp_path / "small" / "config.json").read_text())
    assert saved["vocab_size"] == 151936 and saved["tie_word_embeddings"] is True
    record = json.loads((tmp_path / "small" / "training.json").read_text())
    assert record["steps"] == 24
    # the record names no folder of the machine it ran on
    assert str(tmp_path) not in json.dumps(record)


def test_a_copy_drill_is_count_questions_and_their_calls_scored_on_the_values_alone():
    rng = random.Random(3)
    slots = data.Slots(rng, ["strawberry"])
    candidates = frozenset(drills.spelling_candidates(TOK))
    sample = drills.copy_sample(rng, slots, TOK, candidates)
    assert sample.kind == "copy" and len(sample.ids) == drills.DRILL_TOKENS
    text = TOK.decode(sample.ids)
    assert '{"word": "strawberry", "letter": "' in text
    # what is scored: the word's pieces without its space, then the call's close and its letter; never the question
    scored = [TOK.token_text(i) for i, t in zip(sample.ids, sample.targets, strict=True) if t]
    assert scored[:3] == ["str", "aw", "berry"]
    assert all(i in candidates for i, t in zip(sample.ids, sample.targets, strict=True) if t)
    first_line = TOK.encode(text.split("\n")[0] + "\n")
    assert not any(sample.targets[: len(first_line)])


def test_spelled_rows_are_built_from_their_pieces_and_baking_leaves_a_plain_embedding():
    torch = pytest.importorskip("torch")
    from engine.train.spelled import END, SpelledEmbedding, spelled_words

    words = spelled_words(TOK)
    strawberry = TOK.encode(" strawberry")[0]
    row = int((words.rows == strawberry).nonzero()[0, 0])
    assert [TOK.token_text(int(i)) for i in words.pieces[row, :3]] == ["str", "aw", "berry"]
    assert int(words.pieces[row, 3]) == END
    assert len(words.rows) > 30_000

    embedding = torch.nn.Parameter(torch.randn(151_936, 16) * 0.02)
    spelled = SpelledEmbedding(embedding, words, seed=0)
    built = spelled.weight()
    pieces = [TOK.encode(p)[0] for p in ("str", "aw", "berry")]
    expected = spelled.shift + spelled.end * spelled.places[3]
    for place, piece in enumerate(pieces):
        expected = expected + embedding[piece] * spelled.places[place]
    assert torch.allclose(built[strawberry], expected, atol=1e-6)
    # a piece's row is its own; the gradient of a word's row reaches its pieces' rows
    assert torch.equal(built[pieces[0]], embedding[pieces[0]])
    built[strawberry].sum().backward()
    assert embedding.grad[pieces[0]].abs().sum() > 0
    spelled.bake()
    assert torch.allclose(embedding[strawberry], expected.detach(), atol=1e-6)


def test_rotated_places_turn_each_later_piece_by_its_own_fixed_rotation():
    torch = pytest.importorskip("torch")
    from engine.train.spelled import SpelledEmbedding, spelled_words

    words = spelled_words(TOK)
    embedding = torch.nn.Parameter(torch.randn(151_936, 16) * 0.02)
    spelled = SpelledEmbedding(embedding, words, seed=0, rotate_places=True)
    turns = spelled.rotations
    # the first place as it is; each later one a rotation (orthogonal), none the same as another
    assert torch.equal(turns[0], torch.eye(16))
    for place in range(1, len(turns)):
        assert torch.allclose(turns[place] @ turns[place].T, torch.eye(16), atol=1e-5)
        assert not torch.allclose(turns[place], turns[place - 1], atol=1e-2)
    strawberry = TOK.encode(" strawberry")[0]
    pieces = [TOK.encode(p)[0] for p in ("str", "aw", "berry")]
    expected = spelled.shift + spelled.places[3] * (turns[3] @ spelled.end)
    for place, piece in enumerate(pieces):
        expected = expected + spelled.places[place] * (turns[place] @ embedding[piece])
    assert torch.allclose(spelled.weight()[strawberry], expected, atol=1e-5)
    # the rotations are fixed: nothing trains them
    assert all(parameter is not turns for parameter in spelled.parameters())


def test_no_copy_drill_names_a_held_out_word_or_phrasing():
    rng = random.Random(11)
    slots = data.Slots(rng, data.conversation_words(TOK))
    candidates = frozenset(drills.spelling_candidates(TOK))
    held = data.heldout_words()
    phrasings = [p.split("{")[0] for p in data.training_data()["heldout_count_phrasings"] if not p.startswith("{")]
    for _ in range(40):
        for line in TOK.decode(drills.copy_sample(rng, slots, TOK, candidates).ids).split("\n"):
            words = {w.strip("?.,\"'!:") for w in line.split()}
            assert not words & held, line
            assert not any(line.startswith(p) for p in phrasings), line


def test_word_probes_ask_the_held_out_count_prompts_again_in_the_trainings_own_phrasings():
    from engine.train.heldout import probes, word_probes

    phrasings = data.training_data()["count_phrasings"]
    counted = [p for p in probes(TOK) if p.kind == "count"]
    found = word_probes(TOK)
    assert len(found) == len(counted) == 20 * len(data.STYLE_NAMES)
    for probe, held in zip(found, counted, strict=True):
        # the same word, letter, style and tools: only the phrasing differs, and it is one the training uses
        assert (probe.style, probe.tools, probe.expected) == (held.style, held.tools, held.expected)
        assert probe.expected[1]["word"] in data.heldout_words()
        assert probe.question in {p.format(**probe.expected[1]) for p in phrasings}
        assert probe.question != held.question


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        ({"kv_heads": 3}, "--kv-heads must divide the 4 attention heads, not 3"),
        ({"head_dim": 0}, "--head-dim must be between 1 and 1,024, not 0"),
        ({"composed_share": 1.5}, "--composed-share is a share of the count questions, from 0 to 1, not 1.5"),
        ({"pieces_share": -0.1}, "--pieces-share must be between 0.0 and 1.0 (a share of the samples), not -0.1"),
        ({"copy_share": 0.5, "pieces_share": 0.5}, "the drills' shares add up to more than every sample"),
    ],
)
def test_train_builtin_refuses_a_layout_or_share_it_cannot_train_before_it_starts(tmp_path, flags, said):
    from argparse import Namespace

    from engine.errors import BadInput
    from engine.train.cli import train_builtin

    args = {
        "out": str(tmp_path / "m"),
        "seed": 0,
        "threads": 1,
        "steps": 1,
        "checkpoint_every": 0,
        "rotate_places": False,
        "composed_share": 0.0,
        "kv_heads": None,
        "head_dim": None,
        "no_measure": True,
    }
    with pytest.raises(BadInput, match=re.escape(said)):
        train_builtin(Namespace(**{**args, **flags}))
    assert not (tmp_path / "m").exists()


def test_a_conversation_with_no_tool_is_answered_in_plain_words_whatever_its_style():
    """With no tool the prompt is the same in every style, so one prompt must never teach two answers; and a count
    question asked with no tool is guessed in words, never called."""
    rng = random.Random(4)
    slots = data.Slots(rng, data.conversation_words(TOK), composed=0.5, capitalised=True)
    untooled = [data.conversation(rng, slots, untooled=1.0) for _ in range(300)]
    assert all(not c.tools and c.kind == "answer" and c.expected is None for c in untooled)
    for conv in untooled:
        assert not conv.turn.startswith("Thought:") and "<tool_call>" not in conv.turn
        assert "count_letter" not in conv.turn and "Action:" not in conv.turn
    guesses = [c for c in untooled if c.turn.startswith("Without a tool I can only guess")]
    assert len(guesses) > 100
    # lesson 1's own question is among them, its "without tools" side
    lesson_question = data.training_data()["lesson_calls"][0][0]
    assert any(c.messages[0]["content"] == lesson_question for c in untooled)
    # an answer conversation that happens to offer no tool is plain words too
    for _ in range(200):
        conv = data.answer_conversation(rng, "react")
        assert conv.turn.startswith("Thought:") == bool(conv.tools)


def test_the_strawberry_suites_words_are_never_trained_on_but_strawberry_is():
    held = data.heldout_words()
    assert {"occurrence", "programming", "hippopotamus", "mississippi"} <= held
    assert "strawberry" not in held
    words = set(data.conversation_words(TOK))
    assert not words & held and "strawberry" in words


def test_a_pieces_drill_copies_a_made_up_word_into_a_call_and_scores_the_copy_alone():
    from engine.train.mix import _pieces

    rng = random.Random(8)
    slots = data.Slots(rng, data.conversation_words(TOK), composed=0.5)
    candidates = frozenset(drills.spelling_candidates(TOK))
    pieces = _pieces(TOK)
    assert len(pieces) > 20_000 and not set(pieces) & data.heldout_words()
    capitals = opens = 0
    for _ in range(60):
        sample = drills.pieces_sample(rng, slots, pieces, TOK, candidates, data.heldout_words())
        assert sample.kind == "copy" and 48 <= len(sample.ids) <= 200
        text = TOK.decode(sample.ids)
        word = text.split(drills.COPY_FROM)[1].split('"')[0]
        scored = "".join(TOK.token_text(i) for i, t in zip(sample.ids, sample.targets, strict=True) if t)
        # what is scored is the word as the call writes it and the quote that closes it, nothing else
        assert scored.startswith(word + '"') and len(scored) <= len(word) + 3, (word, scored)
        question = text[: text.index(drills.COPY_FROM)].split("<tool_call>")[0].split("Thought:")[0]
        assert word in question and word.lower() not in data.heldout_words()
        capitals += word[0].isupper()
        # a quarter open a line with the word: its first piece has no space, as in the call
        opens += any(line.lstrip('"').startswith(word) for line in question.split("\n")[1:])
    assert capitals > 3
    assert 5 <= opens <= 30


@pytest.mark.parametrize(
    ("new", "ships", "below"),
    [
        # the same figures: ships
        ({"count_exact": {"native": [8, 20]}, "well_formed": {"native": [25, 37]}}, True, []),
        # more copied, as many well-formed by rate (50 of 74 is 25 of 37): ships
        ({"count_exact": {"native": [9, 20]}, "well_formed": {"native": [50, 74]}}, True, []),
        # more copied but fewer well-formed by rate (24 of 39 < 25 of 37), though more by count than 24 of 37
        (
            {"count_exact": {"native": [16, 20]}, "well_formed": {"native": [24, 39]}},
            False,
            ["well_formed native: 24 of 39 < 25 of 37"],
        ),
        # one copy fewer: held back whatever else it does better
        (
            {"count_exact": {"native": [7, 20]}, "well_formed": {"native": [37, 37]}},
            False,
            ["count_exact native: 7 of 20 < 8 of 20"],
        ),
    ],
)
def test_a_finished_copy_ships_only_where_no_figure_falls_below_the_shipped_models(new, ships, below):
    from engine.train.against import against

    shipped = {"count_exact": {"native": [8, 20]}, "well_formed": {"native": [25, 37]}}
    verdict = against(new, shipped).as_json()
    assert (verdict["ships"], verdict["below"]) == (ships, below)


def test_a_figure_the_new_copy_never_measured_counts_against_it():
    from engine.train.against import against

    verdict = against({"count_exact": {"native": [20, 20]}}, {"count_exact": {"native": [1, 20], "react": [1, 20]}})
    assert not verdict.ships and verdict.missing == ["count_exact react"]
    # the shipped model's own figures, set against themselves, ship
    from engine.settings import BUILTIN_FOLDER

    record = json.loads((BUILTIN_FOLDER / "heldout.json").read_text(encoding="utf-8"))
    same = against(record, record)
    assert same.ships and len(same.rows) == 16


def test_made_up_words_are_named_in_whole_conversations_never_held_out_and_change_nothing_when_off():
    from engine.train.mix import _pieces

    pieces = _pieces(TOK)
    held = data.heldout_words()
    slots = data.Slots(random.Random(3), data.conversation_words(TOK), pieces=pieces, made_up=1.0)
    words = [slots.word() for _ in range(300)]
    known = set(data.conversation_words(TOK))
    assert not {w.lower() for w in words} & held
    # two to four pieces run together: none is a vocabulary word, and many differ
    assert not set(words) & known and len(set(words)) == len(words)
    # off, the draws are exactly those of slots without pieces (the held-out probes' stream stays as it was)
    plain = data.Slots(random.Random(4), data.conversation_words(TOK))
    off = data.Slots(random.Random(4), data.conversation_words(TOK), pieces=pieces, made_up=0.0)
    assert [plain.word() for _ in range(100)] == [off.word() for _ in range(100)]
    # a conversation about a made-up word calls count_letter with it, in the site's own prompt
    rng = random.Random(6)
    slots = data.Slots(rng, data.conversation_words(TOK), pieces=pieces, made_up=1.0)
    conv = next(
        c for c in (data.call_conversation(rng, slots, "native") for _ in range(50)) if c.expected[0] == "count_letter"
    )
    assert conv.expected[1]["word"] not in known and conv.expected[1]["word"] in conv.messages[0]["content"]
