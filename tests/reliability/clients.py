"""Well-behaved clients of the suite: a page's WebSocket and a streaming API
client, each asking one question and saying how it went. Each speaks for one
visitor address (X-Forwarded-For, trusted through the suite's one proxy hop),
as visitors behind a real proxy would."""

import http.client
import json
import time
from dataclasses import dataclass, field

from simple_websocket import Client, ConnectionClosed

OK, REJECTED, FAILED = "ok", "rejected", "failed"


@dataclass
class Outcome:
    kind: str  # "ws" or "api"
    result: str  # OK (the right number of tokens), REJECTED (busy/429 with a retry time) or FAILED
    detail: str = ""
    ttft_s: float | None = None
    gaps_s: list[float] = field(default_factory=list)
    tokens: int = 0
    status: int | None = None  # the API's HTTP status
    run_id: str | None = None


def ask_ws(ws_url: str, address: str, prompt: str, max_tokens: int, timeout: float = 120) -> Outcome:
    """One question over a fresh socket; OK only with exactly max_tokens tokens and finish "length"."""
    start = time.perf_counter()
    try:
        ws = Client.connect(ws_url, headers={"X-Forwarded-For": address})
    except (ConnectionError, OSError) as e:
        return Outcome("ws", FAILED, f"connect: {e}")
    try:
        ws.send(json.dumps({"type": "generate", "prompt": prompt, "max_tokens": max_tokens}))
        times = []
        while True:
            raw = ws.receive(timeout=timeout)
            if raw is None:
                return Outcome("ws", FAILED, f"no message for {timeout} s", tokens=len(times))
            message = json.loads(raw)
            if message["type"] == "token":
                times.append(time.perf_counter())
            elif message["type"] == "done":
                ok = message["finish_reason"] == "length" and len(times) == max_tokens
                return Outcome("ws", OK if ok else FAILED,
                               "" if ok else f"{len(times)} tokens, finish {message['finish_reason']}",
                               times[0] - start if times else None, [b - a for a, b in zip(times, times[1:])],
                               len(times), run_id=message.get("run_id"))
            elif message["type"] == "busy" or (message["type"] == "error" and "retry_after_s" in message):
                return Outcome("ws", REJECTED, message["message"])
            elif message["type"] == "error":
                return Outcome("ws", FAILED, message["message"], tokens=len(times))
    except (ConnectionClosed, OSError) as e:
        return Outcome("ws", FAILED, f"connection lost: {e!r}")
    finally:
        try:
            ws.close()
        except ConnectionClosed:
            pass  # the server closed it first (busy, or a server going down)


def ask_api(host: str, port: int, address: str, prompt: str, max_tokens: int, timeout: float = 120) -> Outcome:
    """One streamed completion over raw HTTP; OK only with max_tokens chunks and a matching usage."""
    start = time.perf_counter()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    body = {"model": "tiny", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    try:
        conn.request("POST", "/v1/completions", json.dumps(body),
                     {"Content-Type": "application/json", "X-Forwarded-For": address})
        response = conn.getresponse()
        if response.status in (429, 503):
            retry = response.getheader("Retry-After")
            response.read()
            return Outcome("api", REJECTED if retry else FAILED, f"{response.status}, Retry-After {retry}",
                           status=response.status)
        if response.status != 200:
            return Outcome("api", FAILED, f"{response.status}: {response.read()[:200]!r}", status=response.status)
        times, usage = [], None
        for line in response:
            if not line.startswith(b"data: "):
                continue
            data = line[6:].strip()
            if data == b"[DONE]":
                break
            chunk = json.loads(data)
            if "error" in chunk:
                return Outcome("api", FAILED, chunk["error"]["message"], status=200, tokens=len(times))
            if chunk["choices"]:
                times.append(time.perf_counter())
            if chunk.get("usage"):
                usage = chunk["usage"]["completion_tokens"]
        ok = len(times) == max_tokens == usage
        return Outcome("api", OK if ok else FAILED, "" if ok else f"{len(times)} chunks, usage {usage}",
                       times[0] - start if times else None, [b - a for a, b in zip(times, times[1:])],
                       len(times), status=200)
    except (OSError, http.client.HTTPException) as e:
        return Outcome("api", FAILED, f"connection lost: {e!r}")
    finally:
        conn.close()
