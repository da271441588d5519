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

from . import wire
from .worker import BUSY, RETRY_AFTER_S, STOPPED, events_until_end, metrics, scheduler

sock = Sock()
POLL_S = 0.05  # while a request runs, how often the socket is checked for cancel/disconnect
GONE = (ConnectionClosed, OSError)  # a send to a dead socket raises either
TRY_AGAIN_LATER = 1013  # the WebSocket close code for overload


@dataclass(frozen=True)
class Desk:
    """What a socket's conversation needs: the engine, the limits, and whom to
    tell about refused requests (the metrics)."""

    engine: Scheduler
    max_tokens: int
    default_max_tokens: int
    on_reject: Callable[[], None] = lambda: None


@sock.route("/ws")
def websocket(ws):
    """Serve one visitor's socket until they leave."""
    c = current_app.config
    serve_socket(ws, Desk(scheduler(), c["MAX_TOKENS_LIMIT"], c["DEFAULT_MAX_TOKENS"], metrics().rejected))


def reject_foreign_origin():
    """flask-sock completes the handshake before the route runs, so a page
    from another site is refused here, before it."""
    origin = request.headers.get("Origin")
    if request.path == "/ws" and origin is not None and urlsplit(origin).netloc != request.host:
        abort(403, description="WebSocket connections are accepted only from this site's own pages")


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
    relay(ws, running, desk)


def relay(ws, running: Request, desk: Desk):
    """Send the request's events as they come; meanwhile answer messages.
    If the visitor leaves, the request is cancelled before the error propagates."""
    try:
        for event in events_until_end(running, desk.engine, POLL_S):
            if event is not None:
                send(ws, wire.event_message(event, running.arrived))
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
