"""One plain HTTP request, no SDK in between: what the tests and the
reliability suite use to see exactly what the server answers."""

import http.client
from urllib.parse import urlsplit


def request(url: str, method: str = "GET", body: bytes | None = None, headers: dict | None = None,
            timeout: float = 10):
    """(status, headers, body) of one request; never raises on a status.
    The headers are looked up without regard to case, as HTTP means them."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body=body,
                     headers=headers or {})
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()
