"""The HTTP server the app runs in: Werkzeug's, one thread per connection.

WebSocket handlers sit in a thread for as long as the visitor keeps the page
open, so shutting down must not wait for them (socketserver's default would
join every one, and Ctrl+C would hang while a tab is open); the threads are
daemons and end with the process.
"""

import socket

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
