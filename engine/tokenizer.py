"""The Chopper: text <-> token ids, one UTF-8 byte per token (ids 0-255).

Encoding is exact and needs no vocabulary. Decoding runs one token at a time
while the answer is typed, so it is incremental: a character split over
several byte-tokens is held back until it is whole, and bytes that can never
form a character come out as U+FFFD rather than an exception.
"""

import codecs

VOCAB_SIZE = 256


def encode(text: str) -> list[int]:
    """Token ids of `text`: its UTF-8 bytes."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, not {type(text).__name__}")
    try:
        return list(text.encode("utf-8"))
    except UnicodeEncodeError as e:
        # A lone surrogate (e.g. "\ud800" from JSON) is not Unicode text.
        raise ValueError(f"text is not valid Unicode: {e.reason} at character {e.start}") from None


def piece(token_id: int) -> bytes:
    """The byte a token stands for."""
    return bytes((token_id,))


def decode(ids) -> str:
    """Whole-sequence decode; invalid bytes become U+FFFD."""
    return bytes(ids).decode("utf-8", errors="replace")


class StreamDecoder:
    """Turns token ids into text as they arrive.

    `feed` returns the text that became complete with this token ("" while a
    multi-byte character is still partial); `flush` ends the stream, turning
    any partial character left over into U+FFFD.
    """

    def __init__(self):
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, token_id: int, final: bool = False) -> str:
        return self._decoder.decode(piece(token_id), final=final)

    def flush(self) -> str:
        return self._decoder.decode(b"", final=True)
