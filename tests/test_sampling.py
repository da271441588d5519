"""Picking the next token: greedy by default, seeded randomness otherwise."""

import numpy as np
import pytest

from engine.sampling import GREEDY, SamplingParams, sample

LOGITS = np.random.default_rng(0).standard_normal(256).astype(np.float32)


def draws(params, n=200):
    rng = params.rng()
    return [sample(LOGITS, params, rng) for _ in range(n)]


def test_greedy_is_argmax():
    assert sample(LOGITS) == int(np.argmax(LOGITS))
    assert GREEDY.rng() is None


def test_temperature_with_a_seed_reproduces_and_varies():
    params = SamplingParams(temperature=1.0, seed=7)
    assert draws(params) == draws(params)
    assert len(set(draws(params))) > 20
    assert draws(params) != draws(SamplingParams(temperature=1.0, seed=8))


def test_top_k_keeps_only_the_k_most_likely():
    top3 = set(np.argsort(LOGITS)[-3:].tolist())
    picked = set(draws(SamplingParams(temperature=5.0, top_k=3, seed=1)))
    assert picked == top3
    assert set(draws(SamplingParams(temperature=1.0, top_k=1, seed=1))) == {int(np.argmax(LOGITS))}


def test_low_temperature_concentrates_on_the_argmax():
    picks = draws(SamplingParams(temperature=0.01, seed=3))
    assert picks.count(int(np.argmax(LOGITS))) == len(picks)


@pytest.mark.parametrize("kwargs, field", [
    ({"temperature": -0.1}, "temperature"),
    ({"temperature": float("nan")}, "temperature"),
    ({"temperature": "hot"}, "temperature"),
    ({"top_k": 0}, "top_k"),
    ({"top_k": 2.5}, "top_k"),
    ({"seed": -1}, "seed"),
    ({"seed": True}, "seed"),
])
def test_bad_parameters_are_named(kwargs, field):
    with pytest.raises(ValueError, match=field):
        SamplingParams(**kwargs)
