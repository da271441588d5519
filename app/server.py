"""The HTTP server the app runs in: Werkzeug's, one thread per connection.

WebSocket handlers sit in a thread for as long as the visitor keeps the page
open, so shutting down must not wait for them (socketserver's default would
join every one, and Ctrl+C would hang while a tab is open); the threads are
daemons and end with the process.
"""

from werkzeug.serving import BaseWSGIServer, make_server


def make_threaded_server(app, host: str, port: int) -> BaseWSGIServer:
    server = make_server(host, port, app, threaded=True)
    server.block_on_close = False
    return server
