"""The real server on a free port, with real clients: HTTP and a WebSocket."""

import http.client
import json
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from simple_websocket import Client, ConnectionClosed

from app import create_app
from app.server import hangup_detector
from app.worker import EXTENSION

from .conftest import receive_until_done, running_server, slow_down, wait_for
from .http import request
from .reliability.server import free_port
from .test_ws import BAD_INPUTS


def test_the_factory_builds_from_settings(monkeypatch):
    monkeypatch.setenv("WF_MAX_TOKENS_LIMIT", "10")
    monkeypatch.setenv("WF_MODEL", "tiny")
    app = create_app({"DEFAULT_MAX_TOKENS": 5})
    try:
        assert app.config["MAX_TOKENS_LIMIT"] == 10 and app.config["DEFAULT_MAX_TOKENS"] == 5
        assert app.extensions[EXTENSION].alive
        assert app.config["SOCK_SERVER_OPTIONS"]["max_message_size"] == 64 * 1024
    finally:
        app.extensions[EXTENSION].close(timeout=5)


def test_a_bad_setting_is_named(monkeypatch):
    monkeypatch.setenv("WF_PORT", "eighty")
    with pytest.raises(ValueError, match="WF_PORT must be a whole number"):
        create_app()


def test_the_page_is_served_with_its_config_and_a_strict_policy(live_server):
    status, headers, body = request(live_server.http + "/")
    page = body.decode()
    assert status == 200 and "random weights" in page
    config = json.loads(page.split('<script type="application/json" id="page-config">')[1].split("</script>")[0])
    assert config["n_ctx"] == 128 and config["kv_bytes_per_token"] == 2 * 2 * 64 * 4
    assert set(config["presets"]) == {"64", "256", "1024"} and len(config["presets"]["256"]) == 256
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    # only this site may frame the main page (the embed and replays are for others: test_share.py)
    assert "frame-ancestors 'self'" in headers["Content-Security-Policy"]
    assert headers["X-Frame-Options"] == "SAMEORIGIN"


def test_plotly_comes_from_the_installed_package_and_is_cached(live_server):
    status, headers, body = request(live_server.http + "/vendor/plotly.min.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert b"plotly" in body[:2000].lower() and len(body) > 1_000_000
    assert "max-age=86400" in headers["Cache-Control"]
    assert request(live_server.http + "/vendor/plotly.min.js", headers={"If-None-Match": headers["ETag"]})[0] == 304


def test_a_request_over_a_real_socket(live_server):
    ws = Client.connect(live_server.ws)
    try:
        ws.send(json.dumps({"type": "generate", "prompt": "Why is the sky blue?", "max_tokens": 12}))
        messages = receive_until_done(ws)
    finally:
        ws.close()
    kinds = [m["type"] for m in messages]
    n_layer = live_server.engine.model.config.n_layer
    assert kinds == ["queued", "tokenized"] + ["prefill_progress"] * n_layer + ["prefilled"] + ["token"] * 12 + ["done"]
    per_token = live_server.engine.model.config.kv_bytes_per_token
    tokens = [m for m in messages if m["type"] == "token"]
    assert [t["kv_bytes"] for t in tokens] == [(20 + i) * per_token for i in range(12)]
    assert messages[-1]["stats"]["output_tokens"] == 12


@pytest.fixture
def slow_decode(live_server, monkeypatch):
    slow_down(monkeypatch, live_server.engine.model)


def test_cancel_and_disconnect_free_the_request(live_server, caches, slow_decode):
    ws = Client.connect(live_server.ws)
    ws.send(json.dumps({"type": "generate", "prompt": "cancel me", "max_tokens": 100}))
    while json.loads(ws.receive(timeout=10))["type"] != "token":
        pass
    ws.send(json.dumps({"type": "cancel"}))
    messages = receive_until_done(ws)
    assert messages[-1]["type"] == "done" and messages[-1]["finish_reason"] == "cancelled"
    assert sum(m["type"] == "token" for m in messages) < 99

    ws.send(json.dumps({"type": "generate", "prompt": "leave me", "max_tokens": 100}))
    while json.loads(ws.receive(timeout=10))["type"] != "token":
        pass
    ws.close()  # the visitor closes the tab mid-answer
    engine = live_server.engine
    wait_for(lambda: engine.running == 0 and engine.waiting == 0, "the abandoned request is still running")
    assert len(caches) == 2 and all(c.bytes_reserved == 0 for c in caches)


def test_bad_input_over_a_real_socket(live_server):
    ws = Client.connect(live_server.ws)
    try:
        for raw, message in BAD_INPUTS:
            if "context holds" in message or "from 1 to 100" in message:
                continue  # this server has the default limits; checked with the fake socket
            ws.send(raw)
            reply = json.loads(ws.receive(timeout=10))
            assert reply["type"] == "error" and message in reply["message"], raw
        ws.send(json.dumps({"type": "generate", "prompt": "x" * 200}))
        assert "context holds 128" in json.loads(ws.receive(timeout=10))["message"]
        ws.send(json.dumps({"type": "generate", "prompt": "x", "max_tokens": 1025}))
        assert "from 1 to 1024" in json.loads(ws.receive(timeout=10))["message"]
        ws.send(json.dumps({"type": "generate", "prompt": "still usable", "max_tokens": 2}))
        assert receive_until_done(ws)[-1]["type"] == "done"
    finally:
        ws.close()


def test_an_oversized_message_closes_with_1009(live_server):
    ws = Client.connect(live_server.ws)
    ws.send(json.dumps({"type": "generate", "prompt": "x" * (70 * 1024)}))
    with pytest.raises(ConnectionClosed):
        while True:
            assert ws.receive(timeout=10) is not None, "the server kept the connection open"
    assert ws.close_reason == 1009


def test_a_full_line_closes_the_socket_with_1013():
    with running_server({"MODEL": "tiny", "MAX_WAITING": 0}) as server:
        ws = Client.connect(server.ws)
        ws.send(json.dumps({"type": "generate", "prompt": "hello?"}))
        busy = json.loads(ws.receive(timeout=10))
        with pytest.raises(ConnectionClosed):
            ws.receive(timeout=10)
    assert busy["type"] == "busy" and busy["retry_after_s"] == 2 and ws.close_reason == 1013


def upgrade_status(live_server, origin):
    """The status of a raw WebSocket handshake sent with this Origin."""
    host, port = live_server.http.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", "/ws", headers={"Origin": origin, "Upgrade": "websocket", "Connection": "Upgrade",
                                            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                                            "Sec-WebSocket-Version": "13"})
        response = conn.getresponse()
        response.close()
        return response.status
    finally:
        conn.close()


def test_a_page_from_another_site_cannot_connect(live_server):
    assert upgrade_status(live_server, "http://evil.example") == 403
    assert upgrade_status(live_server, live_server.http) == 101


def test_connections_leave_no_threads_behind(live_server):
    baseline = threading.active_count()
    for _ in range(5):
        ws = Client.connect(live_server.ws)
        ws.send("not json")
        ws.receive(timeout=10)
        ws.send(json.dumps({"type": "generate", "prompt": "short", "max_tokens": 50}))
        ws.receive(timeout=10)
        ws.close()
    engine = live_server.engine
    wait_for(lambda: threading.active_count() <= baseline and engine.running == 0,
             f"{threading.active_count() - baseline} threads left behind")


def test_python_m_app_serves_and_stops_cleanly():
    """The README's command, as a user runs it: serves the page, logs the model's
    load time, prints the URL, and SIGTERM stops it even with a socket open."""
    port = free_port()
    root = Path(__file__).resolve().parent.parent
    server = subprocess.Popen([sys.executable, "-m", "app", "--model", "tiny", "--port", str(port)], cwd=root,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert f"serving tiny on http://127.0.0.1:{port}/" in line
        assert request(f"http://127.0.0.1:{port}/")[0] == 200
        ws = Client.connect(f"ws://127.0.0.1:{port}/ws")
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=10) == 0
        with pytest.raises(ConnectionClosed):  # the open page sees the server go, and will reconnect
            ws.receive(timeout=5)
    finally:
        server.kill()
        out, err = server.communicate()
    assert "model tiny loaded" in err and "warm-up run" in err


@pytest.mark.parametrize("key", ["werkzeug.socket", "gunicorn.socket"])
def test_a_departed_http_client_is_noticed_under_either_server(key):
    """hangup_detector reads the client's socket as the server hands it over:
    still there while silent or while a pipelined request waits unread; gone
    once the client has closed. Without a socket it can only say "there"."""
    server_side, client_side = socket.socketpair()
    with server_side, client_side:
        gone = hangup_detector({key: server_side})
        assert not gone()
        client_side.sendall(b"GET /next HTTP/1.1\r\n\r\n")  # pipelined: not a hang-up, and left unread
        assert not gone() and server_side.recv(64, socket.MSG_PEEK).startswith(b"GET /next")
        server_side.recv(64)
        client_side.close()
        assert gone()
    assert not hangup_detector({})()
