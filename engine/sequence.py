"""One request's journey through the factory, one model step at a time.

A `Sequence` is chopped when it is made (bad input raises a ParamError then,
before any memory is spent), reads its prompt in chunks, then types one token
per step. The loop that drives it -- `generate` for one request, the
scheduler for many sharing each step -- asks `next_tokens` what to feed the
model, and `step` runs the model once for everyone and turns the result into
each sequence's events.
"""

import time

from . import tokenizer
from .config import ModelConfig
from .errors import ParamError
from .events import Done, PrefillProgress, Prefilled, Token, Tokenized
from .kv_cache import KVCache
from .model import Model
from .sampling import GREEDY, SamplingParams, sample
from .stopping import StopStrings
from .stopwatch import Stats, summarize

MAX_STOP_STRINGS = 8
READ_CHUNK = 1024  # prompt tokens per step when nobody else is typing: bounds the scratch memory


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


class Sequence:
    """A prompt plus max_tokens beyond the context is not an error: the answer
    stops when the context is full, with finish reason "length", as it does at
    max_tokens. With stop strings, it ends at the first one ("stop")."""

    def __init__(self, config: ModelConfig, prompt: str, max_tokens: int, sampling: SamplingParams = GREEDY,
                 stop: tuple[str, ...] = (), arrived: float | None = None):
        self.arrived = time.perf_counter() if arrived is None else arrived
        self.chop_start = time.perf_counter()
        self.ids = check_request(config, prompt, max_tokens, sampling, stop)
        self.tokenized = time.perf_counter()
        self.n_new = min(max_tokens, config.n_ctx - len(self.ids))  # stop when the context is full
        self.sampling, self.rng = sampling, sampling.rng()
        self.decoder, self.stopper = tokenizer.StreamDecoder(), StopStrings(stop)
        self.cache = KVCache(config)
        self.read = 0  # prompt tokens in the cache
        self.feeding = 0  # tokens handed to the model for the step in progress
        self.prefilled: float | None = None
        self.token_times: list[float] = []
        self.last_id: int | None = None
        self.finished = False

    @property
    def prefilling(self) -> bool:
        return self.read < len(self.ids)

    def tokenized_event(self) -> Tokenized:
        return Tokenized(self.tokenized, self.ids, [tokenizer.piece(i) for i in self.ids])

    def next_tokens(self, budget: int) -> list[int]:
        """What to feed the model this step: the next chunk of at most `budget`
        prompt tokens while reading, else the token typed last."""
        if self.read == 0:
            # Room for the whole request now: growing later copies the cache while everyone's step waits.
            # Only address space: the pages are taken as positions are written (engine/memory.py).
            self.cache.reserve(len(self.ids) + self.n_new)
        tokens = self.ids[self.read : self.read + budget] if self.prefilling else [self.last_id]
        self.feeding = len(tokens)
        return tokens

    def makes_token(self, tokens: list[int]) -> bool:
        """Whether feeding `tokens` this step ends in a token typed (a decode
        step, or the chunk that finishes the prompt)."""
        return self.read + len(tokens) >= len(self.ids)

    def progress(self, t: float, layers_done: int, layers_total: int) -> PrefillProgress:
        done = self.read + self.feeding * layers_done / layers_total
        return PrefillProgress(t, done / len(self.ids))

    def advance(self, logits) -> list:
        """The events of the step just run, given this sequence's logits."""
        events = []
        if self.prefilling:
            self.read += self.feeding
            if self.prefilling:
                return events  # more prompt to read; these logits are not sampled
            self.prefilled = time.perf_counter()
            events.append(Prefilled(self.prefilled, len(self.ids), self.cache.bytes_used))
        token_id = sample(logits, self.sampling, self.rng)
        t = time.perf_counter()
        self.token_times.append(t)
        index, self.last_id = len(self.token_times) - 1, token_id
        last = index == self.n_new - 1
        text, stopped = self.stopper.feed(self.decoder.feed(token_id, final=last))
        finish_reason = "stop" if stopped else "length" if last else None
        if finish_reason == "length":
            text += self.stopper.flush()
        events.append(Token(t, index, token_id, text, self.cache.bytes_used, finish_reason))
        if finish_reason:
            self.finished = True
            events.append(Done(time.perf_counter(), finish_reason, self.stats()))
        return events

    def stats(self) -> Stats:
        return summarize(self.arrived, self.chop_start, self.tokenized, self.prefilled, self.token_times,
                         len(self.ids))

    def free(self):
        self.cache.free()


def step(model: Model, plan: list[tuple[Sequence, list[int]]]):
    """Run ONE model step for every (sequence, tokens) in `plan`; yields
    (sequence, event) pairs: prefill progress after each layer, then each
    sequence's Prefilled / Token / Done."""
    steps = model.forward_steps([(tokens, seq.cache) for seq, tokens in plan])
    reading = [seq for seq, _ in plan if seq.prefilling]
    n_layer = model.config.n_layer
    while True:
        try:
            layers = next(steps)
        except StopIteration as finished:
            logits = finished.value
            break
        now = time.perf_counter()
        for seq in reading:
            yield seq, seq.progress(now, layers, n_layer)
    for (seq, _), row in zip(plan, logits):
        for event in seq.advance(row):
            yield seq, event
