"""The WebSocket's JSON messages: client messages parsed into engine calls,
engine events turned into messages. JSON lives here and nowhere deeper.

Client -> server:
    {"type": "generate", "prompt": str, "max_tokens"?: int, "temperature"?: number,
     "top_k"?: int | null, "seed"?: int | null}
    {"type": "cancel"}

Server -> client (t_ms: milliseconds since the server received the request):
    queued {position}  tokenized {ids, pieces}  prefill_progress {fraction}
    prefilled {prompt_tokens, kv_bytes}
    token {index, id, text, kv_bytes, batch, seats, seat, factory_tokens, factory_kv_bytes}
    done {finish_reason, stats | null, run_id?, share_url?, share_key?}: a finished answer is recorded; its
        link replays it, and share_key (only this visitor gets it) lets the page add its browser's times
    error {message, retry_after_s?}: retry_after_s when the address asked too often (the per-address limit)
    busy {message, retry_after_s}, then the socket closes with 1013
    notice {message}: something to know about the figures (a remote engine's chunks that are not tokens)
A remote engine is timed from outside: its tokenized ids are [], a token's id and kv_bytes are null.
"""

import json
from dataclasses import dataclass

from engine.events import Done, Event, Failed, PrefillProgress, Prefilled, Queued, Token, Tokenized
from engine.sampling import SamplingParams
from engine.stopwatch import Stats, ms

from .remote import Notice

GENERATE_FIELDS = {"type", "prompt", "max_tokens", "temperature", "top_k", "seed"}


class WireError(ValueError):
    """A client message the server cannot act on; the text goes back to the client."""


@dataclass(frozen=True)
class Generate:
    prompt: str
    max_tokens: int
    sampling: SamplingParams


@dataclass(frozen=True)
class Cancel:
    pass


def _reject_constant(name):
    raise WireError(f"{name} is not a number JSON allows")


def loads(raw: str | bytes, what: str = "message"):
    """JSON as this server accepts it: no NaN or Infinity, no absurd nesting,
    no integer of thousands of digits; WireError otherwise."""
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except WireError:  # NaN or Infinity, named by _reject_constant
        raise
    except RecursionError:
        raise WireError(f"{what} is nested too deeply") from None
    except UnicodeDecodeError:
        raise WireError(f"{what} is not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise WireError(f"{what} is not valid JSON: {e.msg} at character {e.pos}") from None
    except ValueError:  # Python refuses integers over 4,300 digits (a guard against quadratic parsing)
        raise WireError(f"{what} holds a number too long to read") from None


def parse_message(raw, max_tokens_limit: int, default_max_tokens: int) -> Generate | Cancel:
    """One client message, checked; WireError says what is wrong with it."""
    if not isinstance(raw, str):
        raise WireError("binary messages are not accepted: send JSON text")
    message = loads(raw)
    if not isinstance(message, dict):
        raise WireError("message must be a JSON object with a \"type\"")
    kind = message.get("type")
    if kind == "cancel":
        return Cancel()
    if kind != "generate":
        raise WireError(f"unknown message type {kind!r}: use \"generate\" or \"cancel\"")
    unknown = sorted(set(message) - GENERATE_FIELDS)
    if unknown:
        raise WireError(f"unknown field(s) {', '.join(unknown)}; generate takes {', '.join(sorted(GENERATE_FIELDS))}")
    if "prompt" not in message:
        raise WireError("generate needs a \"prompt\"")
    if not isinstance(message["prompt"], str):
        raise WireError(f"prompt must be a string, not {json_type(message['prompt'])}")
    max_tokens = message.get("max_tokens", default_max_tokens)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= max_tokens_limit:
        raise WireError(f"max_tokens must be a whole number from 1 to {max_tokens_limit}, got {max_tokens!r}")
    temperature = message.get("temperature", 0)
    if temperature is None:
        temperature = 0
    try:
        sampling = SamplingParams(temperature=temperature, top_k=message.get("top_k"), seed=message.get("seed"))
    except ValueError as e:
        raise WireError(str(e)) from None
    return Generate(message["prompt"], max_tokens, sampling)


def json_type(value) -> str:
    return {dict: "an object", list: "an array", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def piece_label(token_id: int) -> str:
    """How a byte-token shows on a chip: printable ASCII as itself, else \\xNN."""
    return chr(token_id) if 0x20 <= token_id < 0x7F else f"\\x{token_id:02x}"


def event_message(event: Event, arrived: float) -> dict:
    """An engine event as a JSON-ready message, timed from the request's arrival."""
    message = {"t_ms": (event.t - arrived) * 1e3}
    match event:
        case Queued(position=position):
            message.update(type="queued", position=position)
        case Tokenized(ids=ids):
            message.update(type="tokenized", ids=ids, pieces=[piece_label(i) for i in ids])
        case PrefillProgress(fraction=fraction):
            message.update(type="prefill_progress", fraction=fraction)
        case Prefilled(prompt_tokens=n, kv_bytes=kv):
            message.update(type="prefilled", prompt_tokens=n, kv_bytes=kv)
        case Token(index=index, id=token_id, text=text, kv_bytes=kv, floor=floor):
            message.update(type="token", index=index, id=token_id, text=text, kv_bytes=kv)
            if floor is not None:
                message.update(batch=floor.batch, seats=list(floor.seats), seat=floor.seat,
                               factory_tokens=floor.factory_tokens, factory_kv_bytes=floor.factory_kv_bytes)
        case Done(finish_reason=reason, stats=stats):
            message.update(type="done", finish_reason=reason, stats=None if stats is None else stats_message(stats))
        case Failed(message=text):
            message.update(type="error", message=text)
        case Notice(message=text):
            message.update(type="notice", message=text)
    return message


def stats_message(stats: Stats) -> dict:
    """A request's figures in milliseconds, named as the page's stopwatches name them."""
    return {
        "prompt_tokens": stats.prompt_tokens,
        "output_tokens": stats.output_tokens,
        "chop_ms": ms(stats.chop_s),
        "prefill_ms": ms(stats.prefill_s),
        "ttft_ms": ms(stats.ttft_s),
        "itl_p50_ms": ms(stats.itl_p50_s),
        "itl_p99_ms": ms(stats.itl_p99_s),
        "itl_max_ms": ms(stats.itl_max_s),
        "total_ms": ms(stats.total_s),
        "person_tokens_per_s": stats.tokens_per_s,
        "decode_tokens_per_s": stats.decode_tokens_per_s,
        "prefill_ms_per_token": stats.prefill_ms_per_token,
        "decode_ms_per_token": stats.decode_ms_per_token,
        "predicted_total_ms": ms(stats.predicted_total_s),
    }


def error_message(text: str, retry_after_s: int | None = None) -> dict:
    """An error; with retry_after_s when asking again later will work (the per-address limit)."""
    message = {"type": "error", "message": text}
    if retry_after_s is not None:
        message["retry_after_s"] = retry_after_s
    return message


def busy_message(text: str, retry_after_s: int) -> dict:
    """Sent before the server closes the socket with 1013 (try again later)."""
    return {"type": "busy", "message": text, "retry_after_s": retry_after_s}


def dumps(message: dict) -> str:
    # allow_nan=False: a NaN must never reach a browser as invalid JSON
    return json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
