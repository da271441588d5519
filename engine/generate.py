"""One request end to end: chop, read, type, as a generator of events.

`generate` checks its input at once (a ValueError naming the problem, before
any work or memory is spent) and returns a generator. Iterating it runs the
request and yields its events (engine/events.py) with perf_counter
timestamps. The caller may stop between any two events (close the generator
or drop it): the KV cache is freed either way, as it is at the end.

A prompt plus max_tokens beyond the context is not an error: the answer
stops when the context is full, with finish reason "length", as it does at
max_tokens. The prompt itself must leave room for at least one new token.
With stop strings, the answer ends at the first one, with finish reason "stop".
"""

import time
from dataclasses import dataclass

from . import tokenizer
from .events import Done, PrefillProgress, Prefilled, Token, Tokenized
from .config import ModelConfig
from .errors import ParamError
from .kv_cache import KVCache
from .model import Model
from .sampling import GREEDY, SamplingParams, sample
from .stopping import StopStrings
from .stopwatch import Stats, summarize

PREFILL_CHUNK = 1024  # tokens per forward call while reading a prompt: bounds the scratch memory


MAX_STOP_STRINGS = 8


def check_request(config: ModelConfig, prompt: str, max_tokens: int, sampling: SamplingParams,
                  stop: tuple[str, ...] = ()) -> list[int]:
    """The prompt's token ids, or a ParamError (a ValueError) naming what is
    wrong with the request."""
    if not isinstance(prompt, str):
        raise ParamError("prompt", f"prompt must be a string, not {type(prompt).__name__}")
    if prompt == "":
        raise ParamError("prompt", "prompt is empty: give at least one character")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ParamError("max_tokens", f"max_tokens must be a whole number >= 1, got {max_tokens!r}")
    if not isinstance(sampling, SamplingParams):
        raise ParamError("sampling", "sampling must be a SamplingParams")
    if not isinstance(stop, tuple) or len(stop) > MAX_STOP_STRINGS or \
            not all(isinstance(s, str) and s for s in stop):
        raise ParamError("stop", f"stop must be up to {MAX_STOP_STRINGS} non-empty strings")
    try:
        ids = tokenizer.encode(prompt)
    except ValueError as e:
        raise ParamError("prompt", f"prompt {e}") from None
    if len(ids) >= config.n_ctx:
        raise ParamError("prompt", f"prompt is {len(ids)} tokens; the context holds {config.n_ctx}, "
                                   f"so a prompt may have at most {config.n_ctx - 1} tokens")
    return ids


def generate(model: Model, prompt: str, max_tokens: int, sampling: SamplingParams = GREEDY,
             arrived: float | None = None, stop: tuple[str, ...] = ()):
    """Check the request and return the generator that runs it.

    `arrived` is when the request reached the server (perf_counter seconds);
    TTFT and total count from it, so time spent waiting in line is included.
    Defaults to now. The answer ends early at the first of the `stop` strings.
    """
    arrived = time.perf_counter() if arrived is None else arrived
    chop_start = time.perf_counter()
    ids = check_request(model.config, prompt, max_tokens, sampling, stop)
    tokenized = time.perf_counter()
    return _run(model, ids, max_tokens, sampling, stop, arrived, chop_start, tokenized)


def _run(model: Model, ids: list[int], max_tokens: int, sampling: SamplingParams, stop: tuple[str, ...],
         arrived: float, chop_start: float, tokenized: float):
    yield Tokenized(tokenized, ids, [tokenizer.piece(i) for i in ids])
    cache = KVCache(model.config)
    try:
        logits = yield from _prefill(model, ids, cache)
        prefilled = time.perf_counter()
        yield Prefilled(prefilled, len(ids), cache.bytes_used)

        n_new = min(max_tokens, model.config.n_ctx - len(ids))  # stop when the context is full
        decoder, stopper, rng = tokenizer.StreamDecoder(), StopStrings(stop), sampling.rng()
        token_times, finish_reason = [], None
        for index in range(n_new):
            token_id = sample(logits, sampling, rng)
            t = time.perf_counter()
            token_times.append(t)
            last = index == n_new - 1
            text, stopped = stopper.feed(decoder.feed(token_id, final=last))
            if stopped:
                finish_reason = "stop"
            elif last:
                text, finish_reason = text + stopper.flush(), "length"
            yield Token(t, index, token_id, text, cache.bytes_used, finish_reason)
            if finish_reason:
                break
            logits = model.forward([token_id], cache)  # the Typewriter: one step for the next token

        stats = summarize(arrived, chop_start, tokenized, prefilled, token_times, len(ids))
        yield Done(time.perf_counter(), finish_reason, stats)
    finally:
        cache.free()


def _prefill(model: Model, ids: list[int], cache: KVCache):
    """Read the prompt in chunks of PREFILL_CHUNK tokens, yielding progress
    after every layer of every chunk; returns the last position's logits."""
    L = model.config.n_layer
    total = L * -(-len(ids) // PREFILL_CHUNK)
    done = 0
    for start in range(0, len(ids), PREFILL_CHUNK):
        steps = model.forward_steps(ids[start : start + PREFILL_CHUNK], cache)
        while True:
            try:
                next(steps)
            except StopIteration as finished:
                logits = finished.value
                break
            done += 1
            yield PrefillProgress(time.perf_counter(), done, total)
    return logits


@dataclass(frozen=True)
class Completion:
    text: str
    token_ids: list[int]
    finish_reason: str
    stats: Stats


def complete(model: Model, prompt: str, max_tokens: int, sampling: SamplingParams = GREEDY,
             stop: tuple[str, ...] = ()) -> Completion:
    """The non-streaming form: run `generate` to the end and collect the answer."""
    texts, ids = [], []
    for event in generate(model, prompt, max_tokens, sampling, stop=stop):
        if isinstance(event, Token):
            texts.append(event.text)
            ids.append(event.id)
        elif isinstance(event, Done):
            return Completion("".join(texts), ids, event.finish_reason, event.stats)
    raise AssertionError("generate ended without a Done event")
