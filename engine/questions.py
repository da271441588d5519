"""The seed experiment's questions: plain ASCII prompts of an exact token count.

With one token per byte, a question of n tokens is n ASCII characters. The
same text serves the command line (engine.measure) and the page's presets.
"""

SEED_SIZES = (64, 256, 1024)

_TEXT = (
    "Why is the sky blue? Sunlight holds every colour; air molecules scatter the short "
    "blue waves far more than the long red ones, so blue light reaches us from all over "
    "the sky, while at sunset the long path through the air leaves mostly orange and red. "
)


def question(n_tokens: int) -> str:
    """A question of exactly `n_tokens` tokens (bytes), ending in '?'."""
    if n_tokens < 1:
        raise ValueError(f"a question needs at least one token, got {n_tokens}")
    body = (_TEXT * (n_tokens // len(_TEXT) + 1))[: n_tokens - 1]
    return body + "?"
