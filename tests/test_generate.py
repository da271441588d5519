"""One request end to end: events in order, honest counts, clean stops, clear errors."""

import gc
import time

import pytest

from engine import tokenizer
from engine.events import Done, PrefillProgress, Prefilled, Token, Tokenized
from engine.generate import complete, generate
from engine.sampling import SamplingParams


def test_events_arrive_in_order_with_honest_counts(tiny_model, caches):
    prompt, n = "Why is the sky blue? é", 12
    events = list(generate(tiny_model, prompt, n))
    kinds = [type(e) for e in events]
    layers = tiny_model.config.n_layer
    assert kinds == [Tokenized] + [PrefillProgress] * layers + [Prefilled] + [Token] * n + [Done]

    tokenized, prefilled, done = events[0], events[layers + 1], events[-1]
    ids = tokenizer.encode(prompt)
    assert tokenized.ids == ids and tokenized.pieces == [bytes([i]) for i in ids]
    assert [e.fraction for e in events[1 : layers + 1]] == [i / layers for i in range(1, layers + 1)]
    per_token = tiny_model.config.kv_bytes_per_token
    assert prefilled.prompt_tokens == len(ids) and prefilled.kv_bytes == len(ids) * per_token

    tokens = [e for e in events if isinstance(e, Token)]
    assert [t.index for t in tokens] == list(range(n))
    # the cache holds the prompt, then one more position per decode step
    assert [t.kv_bytes for t in tokens] == [(len(ids) + i) * per_token for i in range(n)]
    times = [e.t for e in events]
    assert times == sorted(times)

    assert done.finish_reason == "length"
    assert done.stats.output_tokens == n and done.stats.prompt_tokens == len(ids)
    assert done.stats.ttft_s == pytest.approx(tokens[0].t - (tokenized.t - done.stats.chop_s), abs=1e-3)
    assert caches[0].bytes_reserved == 0  # freed at the end


def test_text_pieces_add_up_to_the_decoded_answer(tiny_model):
    result = complete(tiny_model, "hello", 40)
    assert result.text == tokenizer.decode(result.token_ids)
    assert len(result.token_ids) == 40


def test_arrival_time_counts_toward_ttft(tiny_model):
    waited = 0.25
    done = list(generate(tiny_model, "queued", 2, arrived=time.perf_counter() - waited))[-1]
    assert done.stats.ttft_s >= waited
    assert done.stats.total_s >= done.stats.ttft_s


def test_same_seed_same_text(tiny_model):
    params = SamplingParams(temperature=1.0, seed=5)
    first = complete(tiny_model, "sky", 30, params).token_ids
    assert complete(tiny_model, "sky", 30, params).token_ids == first
    assert complete(tiny_model, "sky", 30, SamplingParams(temperature=1.0, seed=6)).token_ids != first
    assert complete(tiny_model, "sky", 30).token_ids == complete(tiny_model, "sky", 30).token_ids


def test_context_full_ends_with_length(tiny_model, caches):
    n_ctx = tiny_model.config.n_ctx
    prompt = "x" * (n_ctx - 5)
    result = complete(tiny_model, prompt, 100)
    assert len(result.token_ids) == 5  # prompt + answer fill the context exactly
    assert result.finish_reason == "length"
    assert caches[0].bytes_reserved == 0


def test_longest_prompt_still_gets_one_token(tiny_model):
    n_ctx = tiny_model.config.n_ctx
    assert len(complete(tiny_model, "x" * (n_ctx - 1), 10).token_ids) == 1


@pytest.mark.parametrize("stop_after", [Tokenized, PrefillProgress, Prefilled, Token])
def test_stopping_between_events_frees_the_cache(tiny_model, caches, stop_after):
    run = generate(tiny_model, "stop me", 50)
    for event in run:
        if isinstance(event, stop_after):
            break
    run.close()
    assert all(c.bytes_reserved == 0 for c in caches)


def test_dropping_the_generator_frees_the_cache(tiny_model, caches):
    run = generate(tiny_model, "abandoned", 50)
    next(run), next(run)
    del run
    gc.collect()
    assert caches and caches[0].bytes_reserved == 0


@pytest.mark.parametrize("prompt, max_tokens, message", [
    ("", 5, "prompt is empty"),
    (None, 5, "prompt must be a string"),
    (["a list"], 5, "prompt must be a string"),
    ("x" * 128, 5, "prompt is 128 tokens; the context holds 128"),
    ("ok", 0, "max_tokens must be"),
    ("ok", -3, "max_tokens must be"),
    ("ok", 2.5, "max_tokens must be"),
    ("ok", True, "max_tokens must be"),
    ("\udc80", 5, "not valid Unicode"),
])
def test_bad_input_is_named_and_nothing_starts(tiny_model, caches, prompt, max_tokens, message):
    with pytest.raises(ValueError, match=message):
        generate(tiny_model, prompt, max_tokens)
    assert caches == []  # no cache, no generator: nothing half-done
