"""The OpenAI-compatible API against the real server, with the official SDK and raw HTTP."""

import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from app import create_app
from app.worker import EXTENSION

from .conftest import ask_over_socket, running_server, slow_down, wait_for
from .http import request


@pytest.fixture
def client(live_server):
    return openai.OpenAI(base_url=live_server.http + "/v1", api_key="EMPTY", max_retries=0, timeout=30)


def metric(live_server, line_start: str) -> float:
    """The value of the /metrics line that starts with `line_start`."""
    for line in request(live_server.http + "/metrics")[2].decode().splitlines():
        if line.startswith(line_start):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no metric line starts with {line_start}")


def raw_post(live_server, body: bytes, method="POST", path="/v1/completions"):
    """A JSON body sent as it is, no SDK in between."""
    return request(live_server.http + path, method, body, {"Content-Type": "application/json"})


def test_streaming_with_usage(client):
    chunks = list(client.completions.create(model="tiny", prompt="Why is the sky blue?", max_tokens=9,
                                            temperature=0, stream=True, stream_options={"include_usage": True}))
    with_choices = [c for c in chunks if c.choices]
    assert len(with_choices) == 9  # one chunk per token
    assert [c.choices[0].finish_reason for c in with_choices] == [None] * 8 + ["length"]
    assert all(c.object == "text_completion" and c.model == "tiny" for c in chunks)
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 9
    assert chunks[-1].usage.prompt_tokens == 20 and chunks[-1].usage.total_tokens == 29


def test_whole_completion_equals_the_streamed_one(client):
    whole = client.completions.create(model="tiny", prompt=["Why?"], max_tokens=12, temperature=0)
    streamed = client.completions.create(model="tiny", prompt="Why?", max_tokens=12, temperature=0, stream=True)
    assert whole.choices[0].text == "".join(c.choices[0].text for c in streamed)
    assert whole.choices[0].finish_reason == "length"
    assert (whole.usage.prompt_tokens, whole.usage.completion_tokens) == (4, 12)


def test_stop_strings_end_the_answer_before_them(client):
    prompt = "hello world"  # its greedy answer has plain letters to stop at
    text = client.completions.create(model="tiny", prompt=prompt, max_tokens=40, temperature=0).choices[0].text
    stops = [text[i:i + 2] for i in range(1, len(text) - 2) if "\ufffd" not in text[i:i + 2]]
    assert stops, f"no two plain characters to stop at in {text!r}"
    cut = text[: text.index(stops[0])]
    whole = client.completions.create(model="tiny", prompt=prompt, max_tokens=40, temperature=0,
                                      stop=[stops[0], "\x00\x01"])
    assert (whole.choices[0].text, whole.choices[0].finish_reason) == (cut, "stop")
    chunks = [c for c in client.completions.create(model="tiny", prompt=prompt, max_tokens=40, temperature=0,
                                                   stop=stops[0], stream=True) if c.choices]
    assert "".join(c.choices[0].text for c in chunks) == cut
    assert chunks[-1].choices[0].finish_reason == "stop" and len(chunks) < 40


def test_sse_framing_on_the_wire(live_server):
    body = json.dumps({"model": "tiny", "prompt": "hi", "max_tokens": 3, "stream": True}).encode()
    status, headers, payload = raw_post(live_server, body)
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    events = payload.decode().split("\n\n")
    assert events[-1] == "" and events[-2] == "data: [DONE]"
    assert all(e.startswith("data: {") for e in events[:-2]) and len(events[:-2]) == 3
    assert json.loads(events[-3].removeprefix("data: "))["choices"][0]["finish_reason"] == "length"


ERRORS = [
    ({"model": "gpt-5"}, openai.NotFoundError, "model", "does not exist"),
    ({"prompt": "x" * 200}, openai.BadRequestError, "input_tokens", "maximum context length is 128 tokens. However, your request has 200"),
    ({"prompt": "x" * 100, "max_tokens": 50}, openai.BadRequestError, "max_tokens", "(50 > 128 - 100)"),
    ({"n": 2}, openai.BadRequestError, "n", "n must be 1"),
    ({"temperature": -1}, openai.BadRequestError, "temperature", "temperature must be"),
    ({"extra_body": {"top_k": -5}}, openai.BadRequestError, "top_k", "top_k must be"),
    ({"max_tokens": 0}, openai.BadRequestError, "max_tokens", "from 1 to 1024"),
    ({"prompt": ""}, openai.BadRequestError, "prompt", "prompt is empty"),
    ({"prompt": ["a", "b"]}, openai.BadRequestError, "prompt", "list holding one string"),
    ({"stop": [1]}, openai.BadRequestError, "stop", "stop must be"),
    ({"echo": True}, openai.BadRequestError, "echo", "not supported"),
]


@pytest.mark.parametrize("change, error, param, message", ERRORS)
def test_errors_raise_the_sdks_exceptions_with_param(client, change, error, param, message):
    with pytest.raises(error) as caught:
        client.completions.create(**{"model": "tiny", "prompt": "hi", "max_tokens": 4, **change})
    assert caught.value.body["param"] == param and message in caught.value.body["message"]
    assert caught.value.body["code"] == caught.value.status_code and caught.value.body["type"].endswith("Error")


@pytest.mark.parametrize("body, message", [
    (b"{not json", "not valid JSON"),
    (b'{"model": "tiny", "prompt": "x", "temperature": NaN}', "NaN is not a number"),
    (b"[1, 2]", "must be a JSON object"),
    (b'{"model": "tiny", "prompt": "x", "max_tokens": "5"}', 'max_tokens must be a whole number, got "5"'),
    (b'{"model": "tiny", "prompt": "x", "stream": "yes"}', "stream must be true or false"),
    (b'{"prompt": "\xc3("}', "not UTF-8"),
    (b'{"model": "tiny", "prompt": "x", "max_tokens": 1' + b"0" * 5000 + b"}", "number too long"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
])
def test_malformed_bodies_get_400(live_server, body, message):
    status, headers, payload = raw_post(live_server, body)
    error = json.loads(payload)["error"]
    assert status == 400 and error["code"] == 400 and message in error["message"]


def test_oversized_body_gets_413_and_wrong_method_405(live_server):
    status, _, payload = raw_post(live_server, b'{"prompt": "' + b"x" * (1024 * 1024) + b'"}')
    assert status == 413 and json.loads(payload)["error"]["code"] == 413
    status, headers, payload = raw_post(live_server, b"", method="GET")
    assert status == 405 and "POST" in headers["Allow"]
    assert json.loads(payload)["error"]["type"] == "MethodNotAllowedError"
    status, _, payload = raw_post(live_server, b"", method="GET", path="/v1/chat/nothing")
    assert status == 404 and json.loads(payload)["error"]["code"] == 404


def outcomes(server) -> tuple[float, float]:
    """How many requests the server has counted as cancelled and as finished."""
    return tuple(metric(server, f'word_factory:requests_total{{model_name="tiny",outcome="{outcome}"}}')
                 for outcome in ("cancelled", "finished"))


def post_on_a_socket(server, **completion) -> socket.socket:
    """Send a completion request on a raw socket, left open for the caller to read or abandon."""
    host, port = server.http.removeprefix("http://").split(":")
    body = json.dumps({"model": "tiny", "prompt": "hi", **completion}).encode()
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    return sock


def test_a_client_leaving_mid_stream_cancels_its_request(live_server, monkeypatch):
    slow_down(monkeypatch, live_server.engine.model)
    cancelled, finished = outcomes(live_server)
    sock = post_on_a_socket(live_server, max_tokens=100, stream=True)
    received = b""
    while received.count(b"data: ") < 3:  # read a few tokens, then vanish
        received += sock.recv(4096)
    sock.close()
    engine = live_server.engine
    wait_for(lambda: engine.running == 0 and engine.waiting == 0, "the abandoned request kept running")
    assert outcomes(live_server) == (cancelled + 1, finished)


def test_a_client_leaving_before_its_whole_answer_cancels_it(live_server, monkeypatch):
    """A non-streaming response writes nothing until the answer is complete;
    the engine must still stop typing for a client that has gone."""
    slow_down(monkeypatch, live_server.engine.model, seconds=0.02)  # 100 tokens would take over 2 s
    cancelled, finished = outcomes(live_server)
    engine = live_server.engine
    sock = post_on_a_socket(live_server, max_tokens=100)
    wait_for(lambda: engine.running == 1, "the request never started")
    sock.close()
    wait_for(lambda: engine.running == 0 and engine.waiting == 0, "the abandoned request kept running", timeout=1.5)
    assert outcomes(live_server) == (cancelled + 1, finished)


def test_a_client_leaving_while_in_line_leaves_the_line(monkeypatch):
    with running_server({"MODEL": "tiny", "MAX_RUNNING": 1}) as server:
        engine = server.engine
        slow_down(monkeypatch, engine.model, seconds=0.02)
        seated = engine.submit("holding the only seat", 200)
        waiting = post_on_a_socket(server, max_tokens=5, stream=True)
        wait_for(lambda: engine.waiting == 1, "the second request did not queue")
        waiting.close()
        wait_for(lambda: engine.waiting == 0, "the abandoned request stayed in line", timeout=2.5)
        assert engine.running == 1 and not seated.cancelled  # the seated one typed on
        assert outcomes(server)[0] == 1
        seated.cancel()


def test_models_health_and_metrics(live_server, client):
    assert [m.id for m in client.models.list()] == ["tiny"]
    assert raw_post(live_server, b"", method="GET", path="/health")[0] == 200
    finished = metric(live_server, 'word_factory:requests_total{model_name="tiny",outcome="finished"}')
    rejected = metric(live_server, 'word_factory:requests_total{model_name="tiny",outcome="rejected"}')
    generated = metric(live_server, 'vllm:generation_tokens_total{model_name="tiny"}')
    client.completions.create(model="tiny", prompt="hi", max_tokens=5)
    with pytest.raises(openai.BadRequestError):
        client.completions.create(model="tiny", prompt="", max_tokens=5)
    ask_over_socket(live_server.ws, prompt="hi", max_tokens=3)  # the page's requests count too
    assert metric(live_server, 'word_factory:requests_total{model_name="tiny",outcome="finished"}') == finished + 2
    assert metric(live_server, 'word_factory:requests_total{model_name="tiny",outcome="rejected"}') == rejected + 1
    assert metric(live_server, 'vllm:generation_tokens_total{model_name="tiny"}') == generated + 8
    for name in ("vllm:time_to_first_token_seconds_count", "vllm:inter_token_latency_seconds_count",
                 "vllm:e2e_request_latency_seconds_count", "vllm:request_queue_time_seconds_count",
                 "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "vllm:prompt_tokens_total", 'vllm:request_success_total{finished_reason="length"'):
        assert metric(live_server, name) >= 0


@pytest.fixture
def lone_app():
    """An app of its own (no server), for states the shared one must not enter."""
    apps = []

    def make(**config):
        app = create_app({"MODEL": "tiny", **config})
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.extensions[EXTENSION].close(timeout=5)


def test_aliases_are_listed_and_answered(lone_app):
    app = lone_app(MODEL_ALIASES="tiny, house-model")
    client = app.test_client()
    assert [m["id"] for m in client.get("/v1/models").json["data"]] == ["tiny", "house-model"]
    reply = client.post("/v1/completions", json={"model": "house-model", "prompt": "hi", "max_tokens": 2})
    assert reply.status_code == 200 and reply.json["model"] == "house-model"


def test_a_full_line_answers_429_with_retry_after(lone_app):
    reply = lone_app(MAX_WAITING=0).test_client().post("/v1/completions", json={"model": "tiny", "prompt": "hi"})
    assert reply.status_code == 429 and reply.headers["Retry-After"] == "2"
    assert reply.json["error"]["code"] == 429


def test_health_says_503_when_the_engine_is_gone(lone_app):
    app = lone_app()
    app.extensions[EXTENSION].close(timeout=5)
    client = app.test_client()
    assert client.get("/health").status_code == 503
    reply = client.post("/v1/completions", json={"model": "tiny", "prompt": "hi"})
    assert reply.status_code == 503 and "not running" in reply.json["error"]["message"]


def test_a_failure_after_the_stream_started_goes_in_band(live_server, monkeypatch):
    model = live_server.engine.model
    steps, calls = model.forward_steps, []

    def breaks_on_the_fourth_step(*args, **kwargs):  # prefill, then three decode steps
        calls.append(1)
        if len(calls) == 4:
            raise FloatingPointError("simulated fault in a decode step")
        return (yield from steps(*args, **kwargs))

    monkeypatch.setattr(model, "forward_steps", breaks_on_the_fourth_step)
    body = json.dumps({"model": "tiny", "prompt": "hi", "max_tokens": 10, "stream": True}).encode()
    status, _, payload = raw_post(live_server, body)
    events = payload.decode().split("\n\n")[:-1]
    assert status == 200 and events[-1] == "data: [DONE]"
    error = json.loads(events[-2].removeprefix("data: "))["error"]
    assert "simulated fault" in error["message"] and error["code"] == 500
    assert sum('"choices"' in e for e in events) == 3  # the tokens made before the fault were delivered
    assert live_server.engine.alive


def test_many_clients_at_once_all_complete(live_server, monkeypatch):
    """Three page visitors and three API clients at the same time share the engine's steps."""
    slow_down(monkeypatch, live_server.engine.model, seconds=0.002)

    def visitor(i):
        messages = ask_over_socket(live_server.ws, prompt=f"visitor {i}", max_tokens=30)
        return sum(m["type"] == "token" for m in messages), messages[-1]["stats"]["output_tokens"]

    def api_client(i):
        client = openai.OpenAI(base_url=live_server.http + "/v1", api_key="EMPTY", max_retries=0, timeout=30)
        chunks = list(client.completions.create(model="tiny", prompt=f"client {i}", max_tokens=30, stream=True,
                                                stream_options={"include_usage": True}))
        return sum(1 for c in chunks if c.choices), chunks[-1].usage.completion_tokens

    peak = []
    with ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(visitor, i) for i in range(3)] + [pool.submit(api_client, i) for i in range(3)]
        while not all(f.done() for f in futures):
            peak.append(live_server.engine.running)
            time.sleep(0.002)
        results = [f.result() for f in futures]
    assert results == [(30, 30)] * 6
    assert max(peak) > 1  # they rode the bus together, not one after another
