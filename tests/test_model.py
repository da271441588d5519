"""The decoder: cached forward equals full recomputation, float32 throughout,
weights reproducible from the seed."""

import numpy as np
import pytest

import engine.model as model_module
from engine.config import preset
from engine.kv_cache import KVCache
from engine.model import Model

from . import reference

RTOL, ATOL = 1e-5, 1e-5  # float32 engine vs float64 oracle


def prompt_ids(n, seed=0):
    return np.random.default_rng(seed).integers(0, 256, n).tolist()


@pytest.mark.parametrize("split", [1, 7, 40, 59])
def test_prefill_then_decode_matches_full_recompute(tiny_model, split):
    ids = prompt_ids(60)
    expected = reference.forward(tiny_model, ids)
    cache = KVCache(tiny_model.config)
    got = [tiny_model.forward(ids[:split], cache)]
    for token in ids[split:]:
        got.append(tiny_model.forward([token], cache))
    assert cache.length == len(ids)
    np.testing.assert_allclose(np.stack(got), expected[split - 1 :], rtol=RTOL, atol=ATOL)


def test_chunked_prefill_matches_one_pass(tiny_model, monkeypatch):
    # Several attention blocks, a prompt read in uneven pieces, and each of the three ways `linear`
    # multiplies (1 row, a few rows, more than FEW_ROWS).
    monkeypatch.setattr(model_module, "ATTN_BLOCK", 16)
    ids = prompt_ids(100, seed=1)
    expected = reference.forward(tiny_model, ids)
    cache = KVCache(tiny_model.config)
    assert 33 <= model_module.FEW_ROWS < 66
    pieces = [tiny_model.forward(ids[a:b], cache, all_logits=True) for a, b in [(0, 33), (33, 34), (34, 100)]]
    np.testing.assert_allclose(np.concatenate(pieces), expected, rtol=RTOL, atol=ATOL)


def test_a_batched_step_gives_each_sequence_what_it_gets_alone(tiny_model):
    """One step carrying a decode token, a prefill chunk over a cache, and a fresh prompt."""
    histories = [prompt_ids(10, 1), prompt_ids(3, 2), []]
    news = [prompt_ids(1, 3), prompt_ids(7, 4), prompt_ids(5, 5)]

    def cache_with(history):
        cache = KVCache(tiny_model.config)
        if history:
            tiny_model.forward(history, cache)
        return cache

    alone = [tiny_model.forward(new, cache_with(h)) for h, new in zip(histories, news)]
    caches = [cache_with(h) for h in histories]
    together = model_module.run_to_end(tiny_model.forward_steps(list(zip(news, caches))))
    for a, b in zip(alone, together):
        np.testing.assert_allclose(b, a, rtol=RTOL, atol=ATOL)
    assert [c.length for c in caches] == [11, 10, 5]


def test_everything_on_the_hot_path_stays_float32(tiny_model):
    cache = KVCache(tiny_model.config)
    logits = [tiny_model.forward(prompt_ids(20), cache), tiny_model.forward([65], cache)]
    logits.append(tiny_model.forward(prompt_ids(3), cache, all_logits=True))
    assert all(out.dtype == np.float32 for out in logits)
    assert cache.k.dtype == cache.v.dtype == np.float32
    assert tiny_model.scratch._buffers and all(b.dtype == np.float32 for b in tiny_model.scratch._buffers.values())
    weights = [tiny_model.wte, tiny_model.wpe] + [w for b in tiny_model.blocks for w in b.matrices()]
    assert all(w.dtype == np.float32 for w in weights)
    # NumPy 2 promotes float32 arrays by any float64 *scalar*: every numpy
    # constant the forward uses must be float32 (Python floats are harmless).
    constants = [v for v in vars(model_module).values() if isinstance(v, np.generic)] + [tiny_model.q_scale]
    assert constants and all(v.dtype == np.float32 for v in constants)


def test_same_seed_same_weights_and_logits(tiny_config):
    a, b = Model(tiny_config), Model(tiny_config)
    other = Model(tiny_config.with_seed(1))
    assert np.array_equal(a.blocks[0].w_fc, b.blocks[0].w_fc)
    assert not np.array_equal(a.blocks[0].w_fc, other.blocks[0].w_fc)
    ids = prompt_ids(10)
    la, lb, lo = (m.forward(ids, KVCache(m.config)) for m in (a, b, other))
    assert np.array_equal(la, lb)
    assert not np.allclose(la, lo)


def test_weights_follow_the_configured_init(tiny_model):
    w = np.concatenate([w.ravel() for b in tiny_model.blocks for w in b.matrices()])
    assert abs(w.mean()) < 1e-3
    assert w.std() == pytest.approx(tiny_model.config.init_std, rel=0.02)


def test_full_size_model_has_gpt2_small_shape():
    """The one test that builds the embedded default (about 1.5 s, 353 MB)."""
    config = preset("gpt2-small")
    assert config.kv_bytes_per_token == 73_728  # 2 x 12 layers x 768 x 4 bytes
    model = Model(config)
    block_bytes = sum(w.nbytes for b in model.blocks for w in b.matrices())
    assert block_bytes == 12 * 7_077_888 * 4  # about 340 MB read per decode step
    assert model.weight_bytes == config.n_params * 4
    cache = KVCache(config)
    logits = model.forward(prompt_ids(5), cache)
    logits = model.forward([int(np.argmax(logits))], cache)
    assert logits.shape == (256,) and logits.dtype == np.float32
    assert cache.bytes_used == 6 * 73_728
