"""The HTTP server the app runs in: Werkzeug's, one thread per connection.

WebSocket handlers sit in a thread for as long as the visitor keeps the page
open, so shutting down must not wait for them (socketserver's default would
join every one, and Ctrl+C would hang while a tab is open); the threads are
daemons and end with the process.

`hangup_detector` lets a plain HTTP response notice that its client left,
under this server or gunicorn.
"""

import select
import socket
import ssl

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server


class NoDelayHandler(WSGIRequestHandler):
    """Tokens go out as many small writes (WebSocket messages, SSE chunks):
    without TCP_NODELAY, Nagle's algorithm holds each until the previous one
    is acknowledged, and clients see tokens arrive in clumps 40 ms apart."""

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def make_threaded_server(app, host: str, port: int) -> BaseWSGIServer:
    server = make_server(host, port, app, threaded=True, request_handler=NoDelayHandler)
    server.block_on_close = False
    return server


def hangup_detector(environ: dict):
    """A function telling whether the HTTP client of this request has gone.

    A response that writes nothing while it waits (a whole completion, or a
    stream still in line) would otherwise learn of a departed client only when
    it finally writes, after the engine did all the work for nobody. Werkzeug
    and gunicorn both hand the client's socket over in the environ; the client
    has gone when it reads as closed (end of file, or reset). Bytes waiting --
    a pipelined next request -- or none mean it is still there. (A client that
    shut its sending side while still reading would count as gone; HTTP
    clients do not do that.) Without a socket (another WSGI server, TLS
    terminated in Python) the answer is always "still there".
    """
    sock = environ.get("werkzeug.socket") or environ.get("gunicorn.socket")
    if not isinstance(sock, socket.socket) or isinstance(sock, ssl.SSLSocket):  # no peeking under TLS
        return lambda: False
    readable = select.poll()  # poll, not select: descriptors past 1,024 are fine
    readable.register(sock, select.POLLIN)

    def gone() -> bool:
        try:
            if not readable.poll(0):
                return False  # nothing to read: no data, no end of file
            return sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):  # reset, or closed under us
            return True

    return gone
