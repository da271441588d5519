"""The OpenAI-compatible API: /v1/completions and /v1/models, behaving like
vLLM so any client that times vLLM, SGLang or llama.cpp can time this
factory unchanged.

Errors are `{"error": {"message", "type", "param", "code"}}` with `code` the
HTTP status. Once a stream has started with 200, a failure goes in-band:
`data: {"error": ...}` then `data: [DONE]`. A client that disconnects
before its answer is complete -- mid-stream, while in line, or while a whole
response is being made -- cancels its request within one engine step (or
EVENT_WAIT_S while it waits in line).
"""

import json
import time
import uuid
from dataclasses import dataclass

from flask import Blueprint, Response, current_app, request

from engine import tokenizer
from engine.errors import ParamError
from engine.events import Done, Failed, Token
from engine.sampling import SamplingParams
from engine.scheduler import EngineStopped, QueueFull, Request, Scheduler

from . import wire
from .ratelimit import rate_limit_text, rate_limited
from .server import hangup_detector
from .worker import (BUSY, RETRY_AFTER_S, STOPPED, context_length, events_until_end, metrics, scheduler,
                     served_model)

bp = Blueprint("openai", __name__, url_prefix="/v1")
ERROR_TYPES = {400: "BadRequestError", 404: "NotFoundError", 405: "MethodNotAllowedError",
               413: "RequestEntityTooLargeError", 429: "TooManyRequestsError", 500: "InternalServerError",
               503: "ServiceUnavailableError"}
EVENT_WAIT_S = 1.0  # how often a waiting response checks that the engine still lives and its client is there
CLIENT_LEFT = 499  # nginx's "client closed request": only the access log sees it
# Fields clients send by default that this server accepts only at their no-op value.
NO_OP_FIELDS = {"top_p": (None, 1, 1.0), "frequency_penalty": (None, 0, 0.0), "presence_penalty": (None, 0, 0.0),
                "logprobs": (None,), "echo": (None, False), "best_of": (None, 1), "suffix": (None,),
                "logit_bias": (None, {})}


class APIError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, retry_after_s: int = RETRY_AFTER_S):
        super().__init__(message)
        self.status, self.message, self.param, self.retry_after_s = status, message, param, retry_after_s


def error_body(status: int, message: str, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": ERROR_TYPES.get(status, "Error"), "param": param, "code": status}}


def error_response(status: int, message: str, param: str | None = None,
                   retry_after_s: int = RETRY_AFTER_S) -> Response:
    response = Response(json.dumps(error_body(status, message, param)), status, mimetype="application/json")
    if status in (429, 503):
        response.headers["Retry-After"] = str(retry_after_s)
    return response


@bp.errorhandler(APIError)
def api_error(e: APIError):
    return error_response(e.status, e.message, e.param, e.retry_after_s)


@dataclass(frozen=True)
class Completion:
    model: str
    prompt: str
    max_tokens: int
    sampling: SamplingParams
    stop: tuple[str, ...]
    stream: bool
    include_usage: bool


def served_names() -> list[str]:
    """The model's name, then its aliases (each once)."""
    c = current_app.config
    names = [served_model()] + [a.strip() for a in c["MODEL_ALIASES"].split(",") if a.strip()]
    return list(dict.fromkeys(names))


def field(body: dict, name: str, kinds: tuple, default=None, what: str = ""):
    """body[name] if it is one of `kinds` (bool is never a number), else APIError 400."""
    value = body.get(name, default)
    if value is None or (isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)):
        return value
    raise APIError(400, f"{name} must be {what}, got {json.dumps(value)}", name)


def parse_completion(body) -> Completion:
    """A /v1/completions body, checked as vLLM checks it."""
    if not isinstance(body, dict):
        raise APIError(400, "the request body must be a JSON object")
    model = field(body, "model", (str,), what="a string")
    if model is None:
        raise APIError(400, "model is required; GET /v1/models lists the names served here", "model")
    if model not in served_names():
        raise APIError(404, f"The model `{model}` does not exist. Served here: {', '.join(served_names())}", "model")
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise APIError(400, "prompt must be a string, or a list holding one string", "prompt")
    n = field(body, "n", (int,), 1, "a whole number")
    if n != 1 and n is not None:
        raise APIError(400, f"n must be 1: this server makes one completion per request, not {n}", "n")
    for name, allowed in NO_OP_FIELDS.items():
        if name in body and body[name] not in allowed:
            raise APIError(400, f"{name}={body[name]!r} is not supported by this server", name)
    limit = current_app.config["MAX_TOKENS_LIMIT"]
    max_tokens = field(body, "max_tokens", (int,), 16, "a whole number")
    max_tokens = 16 if max_tokens is None else max_tokens
    if not 1 <= max_tokens <= limit:
        raise APIError(400, f"max_tokens must be from 1 to {limit}, got {max_tokens}", "max_tokens")
    stop = body.get("stop")
    stop = () if stop is None else (stop,) if isinstance(stop, str) else stop
    if not isinstance(stop, (list, tuple)) or not all(isinstance(s, str) for s in stop):
        raise APIError(400, "stop must be a string or a list of strings", "stop")
    top_k = field(body, "top_k", (int,), what="a whole number")
    temperature = field(body, "temperature", (int, float), 1.0, "a number")
    try:
        sampling = SamplingParams(temperature=1.0 if temperature is None else temperature,
                                  top_k=None if top_k in (None, 0, -1) else top_k,  # vLLM's "no top-k" values
                                  seed=field(body, "seed", (int,), what="a whole number"))
        ids = tokenizer.encode(prompt)
    except ParamError as e:
        raise APIError(400, str(e), e.param) from None
    except ValueError as e:
        raise APIError(400, f"prompt {e}", "prompt") from None
    check_context(len(ids), max_tokens)
    stream = field(body, "stream", (bool,), False, "true or false")
    options = field(body, "stream_options", (dict,), {}, "an object") or {}
    if options and not stream:
        raise APIError(400, "stream_options is only allowed with stream: true", "stream_options")
    include_usage = field(options, "include_usage", (bool,), False, "true or false")
    return Completion(model, prompt, max_tokens, sampling, tuple(stop), bool(stream), bool(include_usage))


def check_context(prompt_tokens: int, max_tokens: int):
    """vLLM's two context errors, for the embedded model (a remote engine checks its own)."""
    n_ctx = context_length()
    if n_ctx is None:
        return
    if prompt_tokens >= n_ctx:
        raise APIError(400, f"This model's maximum context length is {n_ctx} tokens. However, your request has "
                            f"{prompt_tokens} input tokens. Please reduce the length of the input.", "input_tokens")
    if prompt_tokens + max_tokens > n_ctx:
        raise APIError(400, f"'max_tokens' is too large: {max_tokens}. This model's maximum context length is "
                            f"{n_ctx} tokens and your request has {prompt_tokens} input tokens "
                            f"({max_tokens} > {n_ctx} - {prompt_tokens}).", "max_tokens")


@bp.post("/completions")
def completions():
    """Complete a prompt, streamed (server-sent events) or in one response."""
    try:
        completion = parse_completion(wire.loads(request.get_data(cache=False), "the request body"))
        wait_s = rate_limited()
        if wait_s is not None:
            raise APIError(429, rate_limit_text(wait_s), retry_after_s=wait_s)
        running = submit(completion)
    except wire.WireError as e:
        metrics().rejected()
        raise APIError(400, str(e)) from None
    except APIError:
        metrics().rejected()
        raise
    cid, created, engine = f"cmpl-{uuid.uuid4().hex}", int(time.time()), scheduler()
    events = events_while_connected(running, engine, hangup_detector(request.environ))
    if completion.stream:
        return Response(stream(completion, running, events, cid, created), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    return whole(completion, running, events, cid, created)


def submit(completion: Completion) -> Request:
    engine = scheduler()
    try:
        return engine.submit(completion.prompt, completion.max_tokens, completion.sampling, stop=completion.stop)
    except ParamError as e:
        raise APIError(400, str(e), e.param) from None
    except QueueFull:
        raise APIError(429, BUSY) from None
    except EngineStopped:
        raise APIError(503, STOPPED) from None


def choice(text: str, finish_reason: str | None) -> dict:
    return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason, "stop_reason": None}


def usage(running: Request, tokens: int) -> dict:
    """Token counts as the engine counted them (a remote engine's own, from its usage)."""
    return {"prompt_tokens": running.prompt_tokens, "completion_tokens": tokens,
            "total_tokens": running.prompt_tokens + tokens}


class ClientLeft(Exception):
    """The HTTP client went away before its answer was complete."""


def events_while_connected(running: Request, engine: Scheduler, gone):
    """The request's events (None while nothing happens) through its end;
    if `gone()` says the client left first, the request is cancelled and
    ClientLeft raised."""
    for event in events_until_end(running, engine, EVENT_WAIT_S):
        if gone():
            running.cancel()  # nobody will read the answer: stop making it
            raise ClientLeft
        yield event


def stream(completion: Completion, running: Request, events, cid: str, created: int):
    """Server-sent events: one chunk per token, finish_reason on the last one,
    then the usage chunk if asked for, then [DONE]. A client that leaves is
    noticed at its next event or at the next write, whichever comes first;
    either way the request is cancelled."""
    head = {"id": cid, "object": "text_completion", "created": created, "model": completion.model}
    extra = {"usage": None} if completion.include_usage else {}
    tokens = 0
    try:
        for event in events:
            if isinstance(event, Token):
                tokens += 1
                yield sse({**head, "choices": [choice(event.text, event.finish_reason)], **extra})
            elif isinstance(event, Failed) or (isinstance(event, Done) and event.finish_reason == "cancelled"):
                reason = event.message if isinstance(event, Failed) else "the request was cancelled by the server"
                yield sse(error_body(500, reason))
            elif isinstance(event, Done) and completion.include_usage:
                yield sse({**head, "choices": [], "usage": usage(running, tokens)})
        yield "data: [DONE]\n\n"
    except ClientLeft:
        return  # nobody to tell
    finally:
        running.cancel()  # no-op once finished; stops the engine if the client left


def whole(completion: Completion, running: Request, events, cid: str, created: int) -> Response:
    texts, finish_reason = [], None
    try:
        for event in events:
            if isinstance(event, Token):
                texts.append(event.text)
                finish_reason = event.finish_reason
            elif isinstance(event, Failed):
                return error_response(500, event.message)
            elif isinstance(event, Done) and event.finish_reason == "cancelled":
                return error_response(503, "the request was cancelled by the server")
    except ClientLeft:
        return Response(status=CLIENT_LEFT)  # the answer would go nowhere
    body = {"id": cid, "object": "text_completion", "created": created, "model": completion.model,
            "choices": [choice("".join(texts), finish_reason)], "usage": usage(running, len(texts))}
    return Response(json.dumps(body, ensure_ascii=False), mimetype="application/json")


def sse(payload: dict) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


@bp.get("/models")
def models():
    """The model served here, under its name and its aliases."""
    created, root = int(time.time()), served_model()
    return {"object": "list", "data": [{"id": name, "object": "model", "created": created, "owned_by": "word-factory",
                                        "root": root, "max_model_len": context_length()}
                                       for name in served_names()]}
