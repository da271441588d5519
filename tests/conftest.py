import json
import threading
import time
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from simple_websocket import Client

import engine.sequence as sequence_module
from app import create_app
from app.server import make_threaded_server
from app.worker import EXTENSION
from engine.config import preset
from engine.events import Done, Failed
from engine.kv_cache import KVCache
from engine.model import Model


@pytest.fixture(scope="session", autouse=True)
def app_settings(tmp_path_factory):
    """Every app a test builds records its runs in a scratch database, not
    the repo's instance/, and has no per-address limit (every test client is
    127.0.0.1) unless a test sets one."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WF_RUNS_DB", str(tmp_path_factory.mktemp("runs") / "runs.sqlite3"))
        mp.setenv("WF_RATE_LIMIT_PER_MINUTE", "0")
        yield


@pytest.fixture(scope="session")
def tiny_config():
    return preset("tiny")


@pytest.fixture(scope="session")
def tiny_model(tiny_config):
    return Model(tiny_config)


class GatedModel(Model):
    """The tiny model, but every forward pass waits for `gate` to open: lets a
    test hold a request in the engine while others queue behind it."""

    def __init__(self, config):
        super().__init__(config)
        self.gate = threading.Event()

    def forward_steps(self, segments, all_logits=False):
        assert self.gate.wait(10), "test gate never opened"
        return (yield from super().forward_steps(segments, all_logits))


def receive_until_done(ws, timeout=10):
    """A real WebSocket client's messages up to and including done or error."""
    messages = []
    while True:
        raw = ws.receive(timeout=timeout)
        assert raw is not None, f"no message for {timeout} s; got {[m['type'] for m in messages]}"
        messages.append(json.loads(raw))
        if messages[-1]["type"] in ("done", "error"):
            return messages


def ask_over_socket(ws_url: str, **generate) -> list[dict]:
    """Connect, send one generate message, and return every message of its answer."""
    ws = Client.connect(ws_url)
    try:
        ws.send(json.dumps({"type": "generate", **generate}))
        return receive_until_done(ws, timeout=30)
    finally:
        ws.close()


def wait_for(condition, what: str, timeout: float = 5):
    """Poll `condition` until it holds; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.002)


def slow_down(monkeypatch, model, seconds=0.005):
    """Make each engine step of `model` take `seconds` longer, so a cancel or a
    disconnect reliably lands mid-answer (the tiny model types 100 tokens in ~10 ms)."""
    steps = model.forward_steps

    def slow_steps(*args, **kwargs):
        time.sleep(seconds)
        return (yield from steps(*args, **kwargs))

    monkeypatch.setattr(model, "forward_steps", slow_steps)


@pytest.fixture
def gated_model(tiny_config):
    return GatedModel(tiny_config)


@pytest.fixture
def caches(monkeypatch):
    """Every KVCache a generation creates, to check each was freed."""
    made = []

    class Recorded(KVCache):
        def __init__(self, config):
            super().__init__(config)
            made.append(self)

    monkeypatch.setattr(sequence_module, "KVCache", Recorded)
    return made


def drain(request, timeout=10):
    """A request's events up to and including its Done or Failed."""
    events = []
    while True:
        event = request.events.get(timeout=timeout)
        events.append(event)
        if isinstance(event, (Done, Failed)):
            return events


@contextmanager
def running_server(config: dict):
    """The real app with `config` on a free loopback port, served by threads."""
    app = create_app(config)
    server = make_threaded_server(app, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, name="test-server", daemon=True)
    thread.start()
    base = f"127.0.0.1:{server.server_port}"
    try:
        yield SimpleNamespace(http=f"http://{base}", ws=f"ws://{base}/ws", app=app, engine=app.extensions[EXTENSION])
    finally:
        server.shutdown()
        server.server_close()
        app.extensions[EXTENSION].close(timeout=10)


@pytest.fixture(scope="module")
def live_server():
    """The real app (tiny model) shared by a module's tests."""
    with running_server({"MODEL": "tiny"}) as server:
        yield server
