"""Timing an engine elsewhere: this app pointed at a second instance of itself
(the "remote" engine), over real HTTP, as an operator would configure it."""

import json
import urllib.request

import openai
import pytest
from simple_websocket import Client

from .conftest import ask_over_socket, running_server, slow_down, wait_for
from .test_api import metric


@pytest.fixture(scope="module")
def remote():
    with running_server({"MODEL": "tiny"}) as server:
        yield server


@pytest.fixture(scope="module")
def front(remote):
    with running_server({"MODEL": "tiny", "REMOTE_BASE_URL": remote.http + "/v1", "REMOTE_MODEL": "tiny",
                         "MODEL_ALIASES": ""}) as server:
        yield server


def ask(server, **fields):
    return ask_over_socket(server.ws, **{"prompt": "Why is the sky blue?", "max_tokens": 12, **fields})


def test_the_page_times_a_remote_engine_from_outside(front, remote):
    messages = ask(front, temperature=0)
    kinds = [m["type"] for m in messages]
    assert kinds == ["tokenized"] + ["token"] * 12 + ["done"]  # no queue, prefill or KV seen from outside
    assert messages[0]["ids"] == [] and all(m["kv_bytes"] is None and m["id"] is None for m in messages[1:-1])
    # the same answer the remote gives when asked directly
    direct = [m for m in ask(remote, temperature=0) if m["type"] == "token"]
    assert [m["text"] for m in messages[1:-1]] == [m["text"] for m in direct]
    stats = messages[-1]["stats"]
    assert stats["output_tokens"] == 12 and stats["prompt_tokens"] == 20  # from the remote's usage count
    assert stats["ttft_ms"] > 0 and stats["itl_p50_ms"] >= 0 and messages[-1]["finish_reason"] == "length"


def test_the_api_and_metrics_work_through_a_remote_engine(front):
    client = openai.OpenAI(base_url=front.http + "/v1", api_key="EMPTY", max_retries=0, timeout=30)
    assert [m.id for m in client.models.list()] == ["tiny"]
    chunks = list(client.completions.create(model="tiny", prompt="hi", max_tokens=5, temperature=0, stream=True,
                                            stream_options={"include_usage": True}))
    assert sum(1 for c in chunks if c.choices) == 5 and chunks[-1].usage.completion_tokens == 5
    assert metric(front, 'vllm:generation_tokens_total{model_name="tiny"}') >= 5


def test_remote_errors_arrive_as_errors(front):
    messages = ask(front, prompt="x" * 500)  # beyond the remote's context: it refuses, the page is told
    assert messages[-1]["type"] == "error" and "maximum context length" in messages[-1]["message"]


def test_cancel_reaches_a_remote_request(front, remote, monkeypatch):
    slow_down(monkeypatch, remote.engine.model)
    ws = Client.connect(front.ws)
    try:
        ws.send(json.dumps({"type": "generate", "prompt": "slow", "max_tokens": 100}))
        while json.loads(ws.receive(timeout=30))["type"] != "token":
            pass
        ws.send(json.dumps({"type": "cancel"}))
        while (last := json.loads(ws.receive(timeout=30)))["type"] not in ("done", "error"):
            pass
    finally:
        ws.close()
    assert last["type"] == "done" and last["finish_reason"] == "cancelled"
    # the front hung up on the remote, which stopped typing for nobody
    wait_for(lambda: remote.engine.running == 0, "the remote engine kept typing a cancelled answer")


def test_a_remote_run_replays_without_what_could_not_be_seen(front):
    done = ask(front)[-1]
    with urllib.request.urlopen(front.http + done["share_url"], timeout=10) as r:
        page = r.read().decode()
    config = json.loads(page.split('<script type="application/json" id="page-config">')[1].split("</script>")[0])
    assert config["remote"] is True and "kv_bytes_per_token" not in config
    assert 'id="kvchart"' not in page and "cannot be seen from outside" in page
    assert [m["type"] for m in config["run"]["messages"]].count("token") == 12
