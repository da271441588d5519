"""The WebSocket conversation, driven with a fake socket (no server, no network)."""

import collections
import json
import queue
import time
from types import SimpleNamespace

import pytest
from simple_websocket import ConnectionClosed

from app.ws import Desk, serve_socket
from engine.scheduler import Limits, Scheduler

from .conftest import slow_down, wait_for



class When:
    """A scripted client message, sent once `ready(sent_messages)` holds."""

    def __init__(self, ready, raw):
        self.ready, self.raw = ready, raw


class FakeSocket:
    """Plays a client: hands out scripted messages (an exception in the script
    is raised, as a closed socket raises), records what the server sends, and
    disconnects when the script runs out."""

    def __init__(self, *script, fail_send_after=None):
        self.script = collections.deque(script)
        self.sent = []
        self.closed_with = None
        self.fail_send_after = fail_send_after

    def receive(self, timeout=None):
        if self.script:
            item = self.script[0]
            if not isinstance(item, When) or item.ready(self.sent):
                self.script.popleft()
                value = item.raw if isinstance(item, When) else item
                if isinstance(value, Exception):
                    raise value
                return value
            if timeout is not None:
                return None
            raise AssertionError("script waits for a condition while the server waits for a message")
        if timeout is None:
            raise ConnectionClosed(1000, "the test client left")
        return None

    def close(self, reason=None, message=None):
        self.closed_with = reason
        self.script.clear()  # a closed socket receives nothing more

    def send(self, data):
        if self.fail_send_after is not None and len(self.sent) >= self.fail_send_after:
            raise OSError("broken pipe")
        self.sent.append(json.loads(data))

    def types(self):
        return [m["type"] for m in self.sent]


def generate(prompt="Why?", **fields):
    return json.dumps({"type": "generate", "prompt": prompt, **fields})


def tokens_sent(n):
    return lambda sent: sum(m["type"] == "token" for m in sent) >= n


@pytest.fixture
def engine(tiny_model):
    scheduler = Scheduler(tiny_model)
    yield scheduler
    scheduler.close(timeout=10)


@pytest.fixture
def serve(engine):
    """Run a scripted socket to its end; returns how many requests were refused."""
    refused = []

    def run(ws):
        serve_socket(ws, Desk(engine, max_tokens=100, default_max_tokens=8, on_reject=lambda: refused.append(1)))
        return len(refused)

    return run


def idle(engine):
    return engine.running == 0 and engine.waiting == 0


def test_a_request_streams_its_events_in_order(engine, serve):
    ws = FakeSocket(generate("Why is the sky blue?", max_tokens=5))
    serve(ws)
    layers = engine.model.config.n_layer
    assert ws.types() == ["queued", "tokenized"] + ["prefill_progress"] * layers + ["prefilled"] + \
        ["token"] * 5 + ["done"]
    tokens = [m for m in ws.sent if m["type"] == "token"]
    per_token = engine.model.config.kv_bytes_per_token
    assert [t["kv_bytes"] for t in tokens] == [(20 + i) * per_token for i in range(5)]
    assert all(isinstance(t["text"], str) for t in tokens)
    assert [t["batch"] for t in tokens] == [1] * 5  # alone on the bus
    assert [t["factory_kv_bytes"] for t in tokens] == [t["kv_bytes"] for t in tokens]
    assert [t["factory_tokens"] for t in tokens] == list(range(tokens[0]["factory_tokens"], tokens[0]["factory_tokens"] + 5))
    times = [m["t_ms"] for m in ws.sent]
    assert times == sorted(times) and times[0] >= 0
    assert ws.sent[-1]["finish_reason"] == "length" and ws.sent[-1]["stats"]["output_tokens"] == 5


BAD_INPUTS = [
    ("not json", "not valid JSON"),
    (b"\x01\x02", "binary messages are not accepted"),
    ('{"type": "dance"}', "unknown message type"),
    ('{"type": "generate"}', "needs a \"prompt\""),
    ('{"type": "generate", "prompt": 7}', "prompt must be a string"),
    (generate(""), "prompt is empty"),
    (generate("x" * 200), "prompt is 200 tokens; the context holds 128"),
    (generate("x", max_tokens=0), "from 1 to 100"),
    (generate("x", max_tokens=101), "from 1 to 100"),
    (generate("x", temperature=-0.5), "temperature must be"),
    (generate("\ud800"), "not valid Unicode"),
    ('{"type": "generate", "prompt": "x", "max_tokens": 1' + "0" * 5000 + "}", "number too long"),
    ('{"type": "generate", "prompt": "x", "temperature": 1e999}', "temperature must be a finite number"),
    ("[" * 30_000 + "]" * 30_000, "nested too deeply"),  # 60 KB: under the server's 64 KiB message limit
]


@pytest.mark.parametrize("raw, message", BAD_INPUTS)
def test_bad_input_gets_an_error_and_the_connection_stays_usable(engine, serve, caches, raw, message):
    ws = FakeSocket(raw, generate("still here?", max_tokens=2))
    assert serve(ws) == 1  # counted as rejected
    assert ws.sent[0]["type"] == "error" and message in ws.sent[0]["message"]
    assert ws.types()[-1] == "done" and ws.types().count("token") == 2
    assert len(caches) == 1 and idle(engine)  # only the good request ever reached the engine


def test_a_second_generate_while_running_is_refused(engine, serve, monkeypatch):
    slow_down(monkeypatch, engine.model)
    ws = FakeSocket(generate("first", max_tokens=30), When(tokens_sent(1), generate("second")))
    serve(ws)
    errors = [m for m in ws.sent if m["type"] == "error"]
    assert len(errors) == 1 and "already running" in errors[0]["message"]
    assert ws.types().count("token") == 30 and ws.types()[-1] == "done"


def test_cancel_stops_the_request_and_frees_its_memory(engine, serve, caches, monkeypatch):
    slow_down(monkeypatch, engine.model)
    ws = FakeSocket(generate("stop soon", max_tokens=100), When(tokens_sent(2), '{"type": "cancel"}'),
                    When(lambda sent: sent[-1]["type"] == "done", generate("again", max_tokens=3)))
    serve(ws)
    first_done = ws.types().index("done")
    assert ws.sent[first_done]["finish_reason"] == "cancelled"
    assert ws.types()[:first_done].count("token") < 100
    assert ws.types()[first_done + 1:].count("token") == 3  # the connection carries on
    assert all(c.bytes_reserved == 0 for c in caches) and idle(engine)


def test_cancel_with_nothing_running_is_harmless(engine, serve):
    ws = FakeSocket('{"type": "cancel"}', generate("ok", max_tokens=1))
    serve(ws)
    assert ws.types()[-1] == "done" and "error" not in ws.types()


def test_a_visitor_who_leaves_mid_answer_is_cancelled(engine, serve, caches, monkeypatch):
    slow_down(monkeypatch, engine.model)
    ws = FakeSocket(generate("bye", max_tokens=100), When(tokens_sent(3), ConnectionClosed(1001, "tab closed")))
    serve(ws)
    assert ws.types().count("token") < 100 and "done" not in ws.types()
    wait_for(lambda: idle(engine), "the engine is still busy with a request nobody reads")
    assert all(c.bytes_reserved == 0 for c in caches)


def test_a_dead_socket_on_send_cancels_the_request(engine, serve, caches, monkeypatch):
    slow_down(monkeypatch, engine.model)
    ws = FakeSocket(generate("bye", max_tokens=100), fail_send_after=5)
    serve(ws)
    assert len(ws.sent) == 5
    wait_for(lambda: idle(engine), "the engine is still busy with a request nobody reads")
    assert all(c.bytes_reserved == 0 for c in caches)


def test_a_full_line_says_busy_and_closes_with_1013(tiny_model):
    engine = Scheduler(tiny_model, Limits(max_waiting=0))
    try:
        ws = FakeSocket(generate("anyone there?"), generate("never read"))
        serve_socket(ws, Desk(engine, max_tokens=100, default_max_tokens=8))
    finally:
        engine.close(timeout=10)
    assert ws.types() == ["busy"] and ws.closed_with == 1013 and ws.sent[0]["retry_after_s"] == 2


def test_an_engine_that_dies_mid_request_is_reported():
    class DyingEngine:
        alive = True

        def submit(self, *args, **kwargs):
            self.alive = False  # accepts the request, then its thread is gone
            return SimpleNamespace(events=queue.Queue(), arrived=time.perf_counter(), cancel=lambda: None)

    ws = FakeSocket(generate("hello"))
    serve_socket(ws, Desk(DyingEngine(), max_tokens=100, default_max_tokens=8))
    assert ws.types() == ["error"] and "engine stopped" in ws.sent[0]["message"]
