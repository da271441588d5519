"""The WebSocket at /ws: one visitor's conversation with the factory.

The route stays a few lines: it hands the socket to `serve_socket`, a plain
function tests drive with a fake socket. One thread per connection both
relays engine events and polls the socket, so nothing else ever sends on it.
A visitor who leaves or sends "cancel" stops their request within one engine
step; bad messages get an `error` and the connection stays usable.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from flask import abort, current_app, request
from flask_sock import Sock
from simple_websocket import ConnectionClosed

from engine.events import Done, Failed
from engine.scheduler import EngineStopped, QueueFull, Request, Scheduler

from . import share, wire
from .ratelimit import rate_limit_text, rate_limited
from .worker import BUSY, RETRY_AFTER_S, STOPPED, events_until_end, metrics, scheduler

sock = Sock()
POLL_S = 0.05  # while a request runs, how often the socket is checked for cancel/disconnect
GONE = (ConnectionClosed, OSError)  # a send to a dead socket raises either
TRY_AGAIN_LATER = 1013  # the WebSocket close code for overload


@dataclass(frozen=True)
class Desk:
    """What a socket's conversation needs: the engine, the limits, whom to
    tell about refused requests (the metrics), the per-address limit (None:
    go ahead, else seconds to wait), and where finished runs are recorded
    (returning the fields their done message gains)."""

    engine: Scheduler
    max_tokens: int
    default_max_tokens: int
    on_reject: Callable[[], None] = lambda: None
    rate_limited: Callable[[], int | None] = lambda: None
    record: Callable[[wire.Generate, list[dict]], dict] = lambda question, messages: {}


@sock.route("/ws")
def websocket(ws):
    """Serve one visitor's socket until they leave."""
    c = current_app.config
    serve_socket(ws, Desk(scheduler(), c["MAX_TOKENS_LIMIT"], c["DEFAULT_MAX_TOKENS"], metrics().rejected,
                          rate_limited, share.record))


def reject_foreign_origin():
    """flask-sock completes the handshake before the route runs, so a page
    from another site is refused here, before it. This site's own pages (the
    embed in a blog's iframe included: its page is ours) and ALLOWED_ORIGINS pass."""
    origin = request.headers.get("Origin")
    if request.path == "/ws" and origin is not None and not allowed_origin(origin):
        abort(403, description="WebSocket connections are accepted only from this site's own pages")


def allowed_origin(origin: str) -> bool:
    if urlsplit(origin).netloc == request.host:
        return True
    extra = {o.strip().rstrip("/") for o in current_app.config["ALLOWED_ORIGINS"].split(",")}
    return origin in extra - {""}


def serve_socket(ws, desk: Desk):
    """Read messages and run requests until the socket closes."""
    try:
        while True:
            handle(ws, ws.receive(), desk)
    except GONE:
        pass


def handle(ws, raw, desk: Desk, running: Request | None = None):
    """Act on one message; `running` is the request in progress, if any."""
    try:
        message = wire.parse_message(raw, desk.max_tokens, desk.default_max_tokens)
    except wire.WireError as e:
        return refuse(ws, desk, str(e))
    if isinstance(message, wire.Cancel):
        if running is not None:
            running.cancel()  # its Done("cancelled") ends the relay
        return  # with nothing running, the request it meant has already ended
    if running is not None:
        return refuse(ws, desk, "a request is already running on this connection: wait for its "
                                "\"done\" or send {\"type\": \"cancel\"} first")
    wait_s = desk.rate_limited()
    if wait_s is not None:
        desk.on_reject()
        return send(ws, wire.error_message(rate_limit_text(wait_s), retry_after_s=wait_s))
    try:
        running = desk.engine.submit(message.prompt, message.max_tokens, message.sampling, time.perf_counter())
    except QueueFull:
        desk.on_reject()
        send(ws, wire.busy_message(BUSY, RETRY_AFTER_S))
        return ws.close(TRY_AGAIN_LATER, BUSY)  # the next receive sees the socket closed
    except EngineStopped:
        return refuse(ws, desk, STOPPED)
    except ValueError as e:
        return refuse(ws, desk, str(e))
    relay(ws, message, running, desk)


def relay(ws, question: wire.Generate, running: Request, desk: Desk):
    """Send the request's events as they come; meanwhile answer messages.
    A finished answer is recorded, and its done message carries its share link.
    If the visitor leaves, the request is cancelled before the error propagates."""
    sent = []
    try:
        for event in events_until_end(running, desk.engine, POLL_S):
            if event is not None:
                message = wire.event_message(event, running.arrived)
                sent.append(message)
                if isinstance(event, Done) and event.stats is not None:
                    message = {**message, **desk.record(question, sent)}
                send(ws, message)
                if isinstance(event, (Done, Failed)):
                    return  # the next message starts afresh: a generate now is no second request
            raw = ws.receive(timeout=0)
            if raw is not None:
                handle(ws, raw, desk, running)
    except BaseException:
        running.cancel()
        raise


def refuse(ws, desk: Desk, text: str):
    """Answer a message that will not be served with an error; the metrics count it as rejected."""
    desk.on_reject()
    send(ws, wire.error_message(text))


def send(ws, message: dict):
    ws.send(wire.dumps(message))
