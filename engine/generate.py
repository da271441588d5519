"""One request end to end, alone: chop, read, type, as a generator of events.

`generate` checks its input at once (a ValueError naming the problem, before
any work or memory is spent) and returns a generator. Iterating it runs the
request and yields its events (engine/events.py) with perf_counter
timestamps. The caller may stop between any two events (close the generator
or drop it): the KV cache is freed either way, as it is at the end.

This is the one-request form of what the scheduler does for many: the same
Sequence, stepped through the model on its own.
"""

from dataclasses import dataclass

from .events import Done, Token
from .model import Model
from .sampling import GREEDY, SamplingParams
from .sequence import READ_CHUNK, Sequence, step
from .stopwatch import Stats


def generate(model: Model, prompt: str, max_tokens: int, sampling: SamplingParams = GREEDY,
             arrived: float | None = None, stop: tuple[str, ...] = ()):
    """Check the request and return the generator that runs it.

    `arrived` is when the request reached the server (perf_counter seconds);
    TTFT and total count from it, so time spent waiting in line is included.
    Defaults to now. The answer ends early at the first of the `stop` strings.
    """
    return _run(model, Sequence(model.config, prompt, max_tokens, sampling, stop, arrived))


def _run(model: Model, seq: Sequence):
    yield seq.tokenized_event()
    try:
        while not seq.finished:
            for _, event in step(model, [(seq, seq.next_tokens(READ_CHUNK))]):
                yield event
    finally:
        seq.free()


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
