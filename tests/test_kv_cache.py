"""The notebook: grows with use, counts its bytes, gives them back."""

import numpy as np
import pytest

from engine.config import preset
from engine.kv_cache import GROW_TOKENS, KVCache
from engine.sequence import Sequence, step


def test_grows_with_use_not_to_the_whole_context():
    config = preset("gpt2-small")  # shape only: the cache allocates nothing up front
    cache = KVCache(config)
    assert cache.bytes_allocated == 0
    cache.reserve(300)
    cache.length = 300
    assert cache.bytes_used == 300 * 73_728
    assert cache.capacity < 300 + GROW_TOKENS  # about 300 x 72 KiB, not 4,096 positions
    assert cache.bytes_allocated == cache.capacity * 73_728
    cache.free()
    assert (cache.length, cache.bytes_used, cache.bytes_allocated) == (0, 0, 0)


def test_growth_keeps_what_is_held(tiny_config):
    cache = KVCache(tiny_config)
    cache.reserve(5)
    cache.k[:, :, :5] = 1.5
    cache.v[:, :, :5] = -2.0
    cache.length = 5
    cache.reserve(cache.capacity + 1)
    assert cache.capacity > 5
    assert np.all(cache.k[:, :, :5] == 1.5) and np.all(cache.v[:, :, :5] == -2.0)


def test_growth_stops_at_the_context(tiny_config):
    cache = KVCache(tiny_config)
    cache.reserve(tiny_config.n_ctx)
    assert cache.capacity == tiny_config.n_ctx
    with pytest.raises(ValueError, match="exceed the context"):
        cache.reserve(tiny_config.n_ctx + 1)


def test_a_prompt_read_in_chunks_gets_its_room_once(tiny_model):
    """A long prompt shares steps in small chunks; its cache is sized for the
    whole prompt at the first chunk instead of growing (and copying) chunk by chunk."""
    seq = Sequence(tiny_model.config, "x" * 100, 4)
    sizes = []
    while seq.prefilling:
        for _ in step(tiny_model, [(seq, seq.next_tokens(8))]):
            pass
        sizes.append(seq.cache.capacity)
    assert len(sizes) == 13 and len(set(sizes)) == 1 and sizes[0] >= 101
