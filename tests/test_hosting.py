"""Hosting a demo: the repo's gunicorn configuration serves a generation,
the per-address limit answers 429 / an error with Retry-After (page and API
share it), addresses come from X-Forwarded-For only through trusted proxy
hops, and extra WebSocket origins are allowed only when configured."""

import json

import openai
import pytest
from simple_websocket import Client

from app.ratelimit import RateLimiter

from .conftest import ask_over_socket, receive_until_done, running_server
from .reliability.server import Server
from .http import request
from .test_server import upgrade_status


def ask_with(server, headers=None, max_tokens=2):
    """One generate over a socket opened with extra handshake headers; the last message."""
    ws = Client.connect(server.ws, headers=headers or {})
    try:
        ws.send(json.dumps({"type": "generate", "prompt": "hi", "max_tokens": max_tokens}))
        return receive_until_done(ws)[-1]
    finally:
        ws.close()


def complete(server, headers=None):
    return request(server.http + "/v1/completions", "POST",
                   json.dumps({"model": "tiny", "prompt": "hi", "max_tokens": 2}).encode(),
                   {"Content-Type": "application/json", **(headers or {})})


def test_the_bucket_refills_over_the_minute():
    now = [0.0]
    limiter = RateLimiter(per_minute=2, clock=lambda: now[0])
    assert limiter.take("a") is None and limiter.take("a") is None
    assert limiter.take("a") == 30  # one generation comes back every 30 s
    assert limiter.take("b") is None  # another address has its own bucket
    now[0] = 29.0
    assert limiter.take("a") == 1
    now[0] = 30.0
    assert limiter.take("a") is None
    assert RateLimiter(per_minute=0).take("a") is None  # 0: no limit


def test_the_limit_is_shared_by_the_page_and_the_api():
    with running_server({"MODEL": "tiny", "RATE_LIMIT_PER_MINUTE": 2}) as server:
        assert ask_with(server)["type"] == "done"
        assert complete(server)[0] == 200
        refused = ask_with(server)
        status, headers, body = complete(server)
        health = request(server.http + "/health")[0]
    assert refused["type"] == "error" and refused["retry_after_s"] >= 1 and "too many questions" in refused["message"]
    assert status == 429 and int(headers["Retry-After"]) >= 1
    assert json.loads(body)["error"]["code"] == 429 and health == 200  # only generations are counted


def test_the_sdk_sees_a_rate_limit_error():
    with running_server({"MODEL": "tiny", "RATE_LIMIT_PER_MINUTE": 1}) as server:
        client = openai.OpenAI(base_url=server.http + "/v1", api_key="EMPTY", max_retries=0)
        client.completions.create(model="tiny", prompt="hi", max_tokens=2)
        with pytest.raises(openai.RateLimitError, match="too many questions"):
            client.completions.create(model="tiny", prompt="hi", max_tokens=2)


def test_forwarded_addresses_count_only_behind_trusted_hops():
    forwarded = lambda address: {"X-Forwarded-For": address}  # noqa: E731
    with running_server({"MODEL": "tiny", "RATE_LIMIT_PER_MINUTE": 1}) as server:
        # no trusted proxy: the header is a visitor's claim, and every claim is the same loopback address
        assert complete(server, forwarded("10.0.0.1"))[0] == 200
        assert complete(server, forwarded("10.0.0.2"))[0] == 429
    with running_server({"MODEL": "tiny", "RATE_LIMIT_PER_MINUTE": 1, "PROXY_HOPS": 1}) as server:
        assert complete(server, forwarded("10.0.0.1"))[0] == 200
        assert complete(server, forwarded("10.0.0.2"))[0] == 200  # two visitors behind the proxy
        assert complete(server, forwarded("10.0.0.1"))[0] == 429
        assert ask_with(server, forwarded("10.0.0.2"))["type"] == "error"  # the socket sees the same address


def test_extra_origins_are_allowed_only_when_configured(live_server):
    assert upgrade_status(live_server, "https://blog.example") == 403
    with running_server({"MODEL": "tiny", "ALLOWED_ORIGINS": "https://blog.example, https://b.example"}) as server:
        assert upgrade_status(server, "https://blog.example") == 101
        assert upgrade_status(server, "https://b.example") == 101
        assert upgrade_status(server, "https://blog.example.evil") == 403
        assert upgrade_status(server, "null") == 403


def test_gunicorn_serves_the_app_with_the_repos_configuration(tmp_path):
    """`gunicorn -c gunicorn.conf.py`, as README's "Host a demo" says (started
    by the reliability suite's Server): the page, a generation over the
    WebSocket, its share link; SIGTERM stops it cleanly."""
    server = Server(tmp_path, "tiny", {})
    server.start(timeout=30)
    try:
        assert request(f"{server.http}/")[0] == 200
        messages = ask_over_socket(server.ws, prompt="under gunicorn", max_tokens=6)
        assert [m["type"] for m in messages].count("token") == 6 and messages[-1]["type"] == "done"
        assert request(f"{server.http}{messages[-1]['share_url']}")[0] == 200
    finally:
        server.stop()
    assert server.process.returncode == 0 and "Using worker: gthread" in server.log.read_text()
