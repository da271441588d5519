"""Recorded runs over the real server: the done message's link, the replay
page, the downloads, the browser's times added by the run's owner only, the
embed view, oEmbed, who may frame what, and bad ids and queries."""

import csv
import html
import io
import json
import re
import threading
import urllib.parse

import pytest
from simple_websocket import Client

from .conftest import ask_over_socket, receive_until_done, running_server, slow_down
from .http import request


def page_config(html: bytes) -> dict:
    return json.loads(html.decode().split('<script type="application/json" id="page-config">')[1].split("</script>")[0])


@pytest.fixture(scope="module")
def recorded(live_server):
    """One answered question: its messages as received, and its done message."""
    messages = ask_over_socket(live_server.ws, prompt="Share <b>me</b>", max_tokens=12)
    return messages, messages[-1]


def post_times(live_server, done, body):
    return request(live_server.http + done["share_url"] + "/client-times", "POST", json.dumps(body).encode(),
                   {"Content-Type": "application/json"})


def test_a_finished_run_is_recorded_with_its_link(live_server, recorded):
    messages, done = recorded
    assert done["type"] == "done" and done["share_url"] == f"/r/{done['run_id']}" and len(done["share_key"]) >= 16
    status, headers, body = request(live_server.http + done["share_url"])
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    config = page_config(body)
    # the replay gets every message as it was sent (the done without the owner's fields)
    sent = messages[:-1] + [{k: v for k, v in done.items() if k not in ("run_id", "share_url", "share_key")}]
    assert config["run"]["messages"] == sent and config["run"]["client_ms"] is None
    assert config["share_url"] == done["share_url"] and "share_key" not in body.decode()
    assert "Share &lt;b&gt;me&lt;/b&gt;" in body.decode()  # the prompt is text on the page, never markup
    discovery = re.search(r'<link rel="alternate" type="application/json\+oembed" href="([^"]+)"', body.decode())
    oembed = urllib.parse.urlsplit(html.unescape(discovery[1]))
    assert f"http://{oembed.netloc}" == live_server.http and oembed.path == "/oembed"
    assert urllib.parse.parse_qs(oembed.query) == {"url": [live_server.http + done["share_url"]], "format": ["json"]}


def test_a_cancelled_run_is_not_recorded(live_server, monkeypatch):
    slow_down(monkeypatch, live_server.engine.model)  # so the cancel lands mid-answer
    ws = Client.connect(live_server.ws)
    try:
        ws.send(json.dumps({"type": "generate", "prompt": "x", "max_tokens": 100}))
        ws.send(json.dumps({"type": "cancel"}))
        done = receive_until_done(ws)[-1]
    finally:
        ws.close()
    assert done["finish_reason"] == "cancelled" and done["stats"] is None and "run_id" not in done


def test_the_downloads_agree_with_the_run(live_server, recorded):
    messages, done = recorded
    base = live_server.http + done["share_url"]
    tokens = [m for m in messages if m["type"] == "token"]

    status, headers, body = request(base + "/run.json")
    run = json.loads(body)
    assert status == 200 and headers["Content-Disposition"].startswith("attachment;")
    assert run["id"] == done["run_id"] and run["prompt"] == "Share <b>me</b>" and run["settings"]["max_tokens"] == 12

    status, headers, body = request(base + "/tokens.csv")
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert status == 200 and headers["Content-Type"] == "text/csv; charset=utf-8"
    assert [int(r["index"]) for r in rows] == list(range(12))
    assert [float(r["server_ms"]) for r in rows] == pytest.approx([t["t_ms"] for t in tokens])
    assert [int(r["kv_bytes"]) for r in rows] == [t["kv_bytes"] for t in tokens]
    gaps = [float(r["gap_ms"]) for r in rows[1:]]
    assert rows[0]["gap_ms"] == "" and gaps == pytest.approx([b["t_ms"] - a["t_ms"] for a, b in zip(tokens, tokens[1:])])

    status, headers, body = request(base + "/trace.json")
    events = json.loads(body)["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    names = [e["name"] for e in spans]
    assert names[:3] == ["wait in line", "chop (tokenize)", "read (prefill)"]
    assert names[3:] == [f"type token {i}" for i in range(12)]
    starts = [e["ts"] for e in spans]
    assert starts == sorted(starts) and all(e["dur"] >= 0 for e in spans)
    counters = [e["args"]["bytes"] for e in events if e["ph"] == "C"]
    assert counters == [messages[4]["kv_bytes"] if messages[4]["type"] == "prefilled" else counters[0]] + \
        [t["kv_bytes"] for t in tokens]
    assert {e["tid"] for e in spans} == {1}


def test_only_the_owner_adds_the_browsers_times(live_server, recorded):
    messages, done = recorded
    times = [float(i) for i in range(len(messages))]
    assert post_times(live_server, done, {"key": "not the key", "client_ms": times})[0] == 403
    for bad in ({"key": done["share_key"], "client_ms": times[:-1]},
                {"key": done["share_key"], "client_ms": times[:-1] + ["1"]},
                {"key": done["share_key"]}, {"client_ms": times}, ["not", "an object"]):
        status, _, body = post_times(live_server, done, bad)
        assert status == 400 and json.loads(body)["error"]["message"]
    status, _, body = request(live_server.http + done["share_url"] + "/client-times", "POST", b"{nope",
                              {"Content-Type": "application/json"})
    assert status == 400 and "not valid JSON" in json.loads(body)["error"]["message"]
    assert post_times(live_server, {"share_url": "/r/AAAAAAAAAAAAAAAA"}, {"key": "k", "client_ms": []})[0] == 404

    assert post_times(live_server, done, {"key": done["share_key"], "client_ms": times})[0] == 204
    rows = list(csv.DictReader(io.StringIO(request(live_server.http + done["share_url"] + "/tokens.csv")[2].decode())))
    token_positions = [i for i, m in enumerate(messages) if m["type"] == "token"]
    assert [float(r["client_ms"]) for r in rows] == [times[i] for i in token_positions]
    trace = json.loads(request(live_server.http + done["share_url"] + "/trace.json")[2])["traceEvents"]
    assert len([e for e in trace if e["ph"] == "i" and e["tid"] == 2]) == 12  # the browser's thread


@pytest.mark.parametrize("path", ["/r/nope", "/r/AAAAAAAAAAAAAAAA", "/r/AAAAAAAAAAAAAAAA/tokens.csv",
                                  "/r/AAAAAAAAAAAAAAAA/trace.json", "/r/%00%01", "/r/..%2F..%2Fapp%2Fconfig.py",
                                  "/static/..%2Fapp%2Fconfig.py", "/static/../app/config.py",
                                  "/embed?run=AAAAAAAAAAAAAAAA", "/embed?run=../../x"])
def test_unknown_runs_and_paths_get_a_404_page(live_server, path):
    status, headers, body = request(live_server.http + path)
    assert status == 404 and headers["Content-Type"].startswith("text/html")
    assert "404" in body.decode() and "Traceback" not in body.decode()


@pytest.mark.parametrize("query, message", [
    ("", "needs ?prompt="),
    ("?prompt=hi&theme=blue", "theme must be light, dark or auto"),
    ("?prompt=hi&max_tokens=0", "max_tokens must be a whole number from 1 to"),
    ("?prompt=hi&max_tokens=1e9", "max_tokens must be a whole number"),
    ("?prompt=hi&max_tokens=%EF%BC%91", "max_tokens must be a whole number"),  # a full-width digit
    ("?prompt=hi&autoplay=maybe", "autoplay must be 1 or 0"),
    ("?prompt=hi&run=AAAAAAAAAAAAAAAA", "either prompt"),
    ("?prompt=" + "x" * 2001, "longer than 2000 characters"),
])
def test_bad_embed_queries_get_a_400_page_that_says_why(live_server, query, message):
    status, headers, body = request(live_server.http + "/embed" + query)
    assert status == 400 and headers["Content-Type"].startswith("text/html") and message in body.decode()


def test_the_embed_view(live_server, recorded):
    _, done = recorded
    status, _, body = request(live_server.http + "/embed?prompt=" + urllib.parse.quote("<script>x</script>") +
                            "&max_tokens=7&autoplay=1&theme=dark&utm_source=blog")  # others' parameters are ignored
    config = page_config(body)
    assert status == 200 and '<html lang="en" data-theme="dark">' in body.decode()
    assert config["prompt"] == "<script>x</script>" and config["max_tokens"] == 7 and config["autoplay"] is True
    assert "<script>x</script>" not in body.decode().split('id="page-config"')[0]  # shown as text only
    status, _, body = request(live_server.http + f"/embed?run={done['run_id']}&theme=light")
    config = page_config(body)
    assert status == 200 and config["run"]["messages"][-1]["type"] == "done" and config["autoplay"] is False


def test_only_the_embed_and_replays_may_be_framed_by_others(live_server, recorded):
    _, done = recorded
    for path in ("/embed?prompt=hi", done["share_url"]):
        headers = request(live_server.http + path)[1]
        assert "frame-ancestors *" in headers["Content-Security-Policy"] and "X-Frame-Options" not in headers
    for path in ("/", done["share_url"] + "/run.json", "/r/AAAAAAAAAAAAAAAA/tokens.csv", "/health", "/v1/models"):
        headers = request(live_server.http + path)[1]
        assert "frame-ancestors 'self'" in headers["Content-Security-Policy"] and headers["X-Frame-Options"] == "SAMEORIGIN"


def test_frame_ancestors_are_configurable():
    with running_server({"MODEL": "tiny", "FRAME_ANCESTORS": "https://blog.example"}) as server:
        headers = request(server.http + "/embed?prompt=hi")[1]
    assert "frame-ancestors https://blog.example;" in headers["Content-Security-Policy"] + ";"


def test_oembed_answers_for_a_runs_link(live_server, recorded):
    _, done = recorded
    link = live_server.http + done["share_url"]
    status, headers, body = request(f"{live_server.http}/oembed?url={urllib.parse.quote(link)}&maxwidth=500")
    answer = json.loads(body)
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert answer["version"] == "1.0" and answer["type"] == "rich" and answer["width"] == 500
    assert f'src="{live_server.http}/embed?run={done["run_id"]}"' in answer["html"]
    assert request(f"{live_server.http}/oembed?url={urllib.parse.quote(link)}&format=xml")[0] == 501
    for url in ("http://elsewhere.example" + done["share_url"], live_server.http + "/", "", link + "/run.json"):
        assert request(f"{live_server.http}/oembed?url={urllib.parse.quote(url)}")[0] == 404
    assert request(f"{live_server.http}/oembed?url={urllib.parse.quote(link)}&maxheight=-1")[0] == 400


def test_runs_are_saved_while_links_are_read(live_server, recorded):
    """20 runs recorded over 20 sockets while 50 share links are read, all at once: all succeed."""
    _, done = recorded
    results, errors = [], []

    def ask():
        try:
            results.append(ask_over_socket(live_server.ws, prompt="concurrent", max_tokens=8)[-1])
        except Exception as e:  # noqa: BLE001 -- collected and asserted below
            errors.append(e)

    def read():
        try:
            assert request(live_server.http + done["share_url"])[0] == 200
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=ask) for _ in range(20)] + [threading.Thread(target=read) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and len(results) == 20
    for done in results:
        assert request(live_server.http + done["share_url"] + "/tokens.csv")[2].decode().count("\n") == 9
