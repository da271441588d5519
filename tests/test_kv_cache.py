"""The notebook: memory follows use, counts its bytes, gives them back."""

import sys

import numpy as np
import pytest

from engine.config import preset
from engine.kv_cache import KVCache
from engine.sequence import Sequence, step


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads resident memory from /proc")
def test_resident_memory_follows_the_positions_written_not_the_reservation():
    """A whole-context reservation (302 MB of address space for GPT-2 small)
    holding 300 positions is about 300 x 72 KiB resident, and nothing once freed."""
    config = preset("gpt2-small")  # shape only: no model is built
    cache = KVCache(config)
    before = resident_bytes()
    cache.reserve(config.n_ctx)
    assert cache.bytes_reserved == config.n_ctx * 73_728
    cache.k[:, :, :300] = 1.0
    cache.v[:, :, :300] = 1.0
    cache.length = 300
    held = resident_bytes() - before
    assert cache.bytes_used == 300 * 73_728  # 21.1 MiB
    assert 300 * 73_728 <= held < 2 * 300 * 73_728, f"{held / 2**20:.0f} MiB resident for 300 positions"
    cache.free()
    assert (cache.length, cache.bytes_used, cache.bytes_reserved) == (0, 0, 0)
    assert resident_bytes() - before < 4 * 2**20  # handed back to the system, not kept by the allocator


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


def test_a_request_gets_its_room_once_and_never_copies_its_cache(tiny_model):
    """A long prompt is read in small chunks and the answer typed token by
    token; the cache is sized for the whole request at the first chunk, so it
    is never grown (copied) while everyone's step waits."""
    seq = Sequence(tiny_model.config, "x" * 60, 40)
    arrays = []
    while not seq.finished:
        for _ in step(tiny_model, [(seq, seq.next_tokens(8))]):
            pass
        if not any(a is seq.cache.k for a in arrays):
            arrays.append(seq.cache.k)
    assert len(arrays) == 1 and seq.cache.capacity >= 60 + 40
    assert seq.cache.length == 60 + 39  # the last token typed is never fed back
