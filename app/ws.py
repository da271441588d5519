"""The WebSocket at /ws: one visitor's conversation with the factory.

The route stays a few lines: it hands the socket to `serve_socket`, a plain
function tests drive with a fake socket. One thread per connection both
relays engine events and polls the socket, so nothing else ever sends on it.
A visitor who leaves or sends "cancel" stops their request within one engine
step; bad messages get an `error` and the connection stays usable.
"""

import queue
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from flask import abort, current_app, request
from flask_sock import Sock
from simple_websocket import ConnectionClosed

from engine.events import Done, Failed
from engine.scheduler import EngineStopped, QueueFull, Request, Scheduler

from . import wire
from .worker import scheduler

sock = Sock()
POLL_S = 0.05  # while a request runs, how often the socket is checked for cancel/disconnect
GONE = (ConnectionClosed, OSError)  # a send to a dead socket raises either


@dataclass(frozen=True)
class Limits:
    max_tokens: int
    default_max_tokens: int


@sock.route("/ws")
def websocket(ws):
    """Serve one visitor's socket until they leave."""
    # Tokens are small messages sent one by one: without TCP_NODELAY, Nagle's
    # algorithm holds each until the previous one is acknowledged, and the
    # browser sees tokens arrive in clumps 40 ms apart.
    ws.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c = current_app.config
    serve_socket(ws, scheduler(), Limits(c["MAX_TOKENS_LIMIT"], c["DEFAULT_MAX_TOKENS"]))


def reject_foreign_origin():
    """flask-sock completes the handshake before the route runs, so a page
    from another site is refused here, before it."""
    origin = request.headers.get("Origin")
    if request.path == "/ws" and origin is not None and urlsplit(origin).netloc != request.host:
        abort(403, description="WebSocket connections are accepted only from this site's own pages")


def serve_socket(ws, engine: Scheduler, limits: Limits):
    """Read messages and run requests until the socket closes."""
    try:
        while True:
            handle(ws, ws.receive(), engine, limits)
    except GONE:
        pass


def handle(ws, raw, engine: Scheduler, limits: Limits, running: Request | None = None):
    """Act on one message; `running` is the request in progress, if any."""
    try:
        message = wire.parse_message(raw, limits.max_tokens, limits.default_max_tokens)
    except wire.WireError as e:
        return send(ws, wire.error_message(str(e)))
    if isinstance(message, wire.Cancel):
        if running is not None:
            running.cancel()  # its Done("cancelled") ends the relay
        return  # with nothing running, the request it meant has already ended
    if running is not None:
        return send(ws, wire.error_message("a request is already running on this connection: wait for its "
                                           "\"done\" or send {\"type\": \"cancel\"} first"))
    arrived = time.perf_counter()
    try:
        running = engine.submit(message.prompt, message.max_tokens, message.sampling, arrived)
    except ValueError as e:
        return send(ws, wire.error_message(str(e)))
    except QueueFull:
        return send(ws, wire.error_message("the factory is busy: too many requests are waiting, try again soon"))
    except EngineStopped:
        return send(ws, wire.error_message("the engine is not running; the server needs a restart"))
    relay(ws, running, engine, limits)


def relay(ws, running: Request, engine: Scheduler, limits: Limits):
    """Send the request's events as they come; meanwhile answer messages.
    If the visitor leaves, the request is cancelled before the error propagates."""
    try:
        while True:
            try:
                event = running.events.get(timeout=POLL_S)
            except queue.Empty:
                event = None
            if event is not None:
                send(ws, wire.event_message(event, running.arrived))
                if isinstance(event, (Done, Failed)):
                    return
            raw = ws.receive(timeout=0)
            if raw is not None:
                handle(ws, raw, engine, limits, running)
    except BaseException:
        running.cancel()
        raise


def send(ws, message: dict):
    ws.send(wire.dumps(message))
