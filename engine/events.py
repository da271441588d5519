"""What one request reports as it moves through the factory, in order:

    Queued*, Tokenized, PrefillProgress*, Prefilled, Token+, then Done or Failed

(Queued comes from the scheduler while the request waits in line; a request
cancelled at any point ends with Done(finish_reason="cancelled").)

Every event carries `t`, a `time.perf_counter()` reading in seconds, taken
when the thing it reports had happened. Converting to wire formats (JSON,
milliseconds since arrival) is the web edge's job, not the engine's.
"""

from dataclasses import dataclass

from .stopwatch import Stats


@dataclass(frozen=True)
class Queued:
    """Waiting in line: `position` 1 is next."""

    t: float
    position: int


@dataclass(frozen=True)
class Tokenized:
    """The Chopper finished: the prompt as token ids and the bytes they stand for."""

    t: float
    ids: list[int]
    pieces: list[bytes]


@dataclass(frozen=True)
class PrefillProgress:
    """The Reader got further through the prompt: `fraction` of it has gone
    through the model (counted per layer, so a long prompt's bar moves)."""

    t: float
    fraction: float


@dataclass(frozen=True)
class Prefilled:
    """The Reader finished: the prompt is in the KV cache."""

    t: float
    prompt_tokens: int
    kv_bytes: int


@dataclass(frozen=True)
class Token:
    """The Typewriter produced one token.

    `text` is what became printable with it: "" while a multi-byte character
    is incomplete (or while it may be the start of a stop string).
    `kv_bytes` is what the cache holds after this step (id and kv_bytes are
    None when an engine is timed from outside). `finish_reason` is set
    on the answer's last token only ("length" or "stop"), so a stream can say
    so with the token itself.
    """

    t: float
    index: int
    id: int
    text: str
    kv_bytes: int
    finish_reason: str | None = None
    floor: "Floor | None" = None  # the factory at this step, when a scheduler served it


@dataclass(frozen=True)
class Floor:
    """The factory floor at one step, as seen by one rider: how many requests
    shared the step and which seats they sat in (anonymous numbers from 1,
    freed when a request ends), this rider's own seat, the tokens the whole
    factory has typed so far, and the KV bytes all running requests hold."""

    batch: int
    seats: tuple[int, ...]
    seat: int
    factory_tokens: int
    factory_kv_bytes: int


@dataclass(frozen=True)
class Done:
    """The answer is over. `finish_reason` is "length" (max_tokens reached or
    the context full) or "stop" (a stop string appeared), with the request's
    `stats`; or "cancelled", with stats None since a cancelled answer has no
    complete set of figures."""

    t: float
    finish_reason: str
    stats: Stats | None


@dataclass(frozen=True)
class Failed:
    """The engine could not finish this request; `message` says why."""

    t: float
    message: str


Event = Queued | Tokenized | PrefillProgress | Prefilled | Token | Done | Failed
