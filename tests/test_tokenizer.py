"""The Chopper: bytes in, text out, one token at a time."""

import pytest

from engine import tokenizer


@pytest.mark.parametrize("text", ["Why is the sky blue?", "café", "日本語", "emoji 🙂 and 👍🏽", "\x00\n\t"])
def test_round_trip(text):
    ids = tokenizer.encode(text)
    assert ids == list(text.encode("utf-8"))
    assert all(0 <= i < tokenizer.VOCAB_SIZE for i in ids)
    assert tokenizer.decode(ids) == text
    decoder = tokenizer.StreamDecoder()
    assert "".join(decoder.feed(i) for i in ids) + decoder.flush() == text


def test_split_character_appears_once_and_whole():
    decoder = tokenizer.StreamDecoder()
    first, second = tokenizer.encode("é")
    assert decoder.feed(first) == ""  # held back: half a character
    assert decoder.feed(second) == "é"
    emoji = tokenizer.encode("🙂")
    assert [decoder.feed(i) for i in emoji] == ["", "", "", "🙂"]


def test_invalid_bytes_become_replacement_characters():
    decoder = tokenizer.StreamDecoder()
    assert decoder.feed(0xFF) == "\ufffd"  # never valid in UTF-8
    assert decoder.feed(0x41) == "A"
    assert decoder.feed(0xC3) == ""  # could still become a character...
    assert decoder.feed(0x41) == "\ufffdA"  # ...but did not
    assert decoder.feed(0xE6) == ""
    assert decoder.flush() == "\ufffd"  # the stream ended mid-character
    assert tokenizer.decode([0x80, 0x41]) == "\ufffdA"


def test_final_feed_flushes_a_partial_character():
    decoder = tokenizer.StreamDecoder()
    assert decoder.feed(0xE6) == ""
    assert decoder.feed(0x97, final=True) == "\ufffd"


def test_piece_is_the_byte_itself():
    assert [tokenizer.piece(i) for i in tokenizer.encode("é")] == [b"\xc3", b"\xa9"]


@pytest.mark.parametrize("bad", [None, 42, b"bytes"])
def test_encode_rejects_non_strings(bad):
    with pytest.raises(ValueError, match="must be a string"):
        tokenizer.encode(bad)


def test_encode_rejects_lone_surrogates():
    with pytest.raises(ValueError, match="not valid Unicode"):
        tokenizer.encode("ok \ud800 not ok")
