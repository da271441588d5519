"""The suite's phases. Each runs against a live Server, bounded in time and
count, and returns a Phase: the figures it measured and the checks it made.

load        crowds of page and API visitors arriving at random
faults      clients that vanish, stop reading, never send, never answer pings
bad_input   every malformed thing a visitor can send, each with its expected answer
security    nothing a visitor sends is fetched, framed or run
persistence SIGKILL while runs are saved; the database afterwards
soak        hundreds of short and aborted generations back to back
"""

import http.client
import json
import random
import socket
import sqlite3
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from simple_websocket import Client

from engine.stopwatch import percentile

from .clients import FAILED, OK, REJECTED, ask_api, ask_ws
from .rawws import BINARY, TEXT, RawSocket, drop
from .server import Server

SETTLE_S = 60  # how long resources may take to return to their baseline after the clients leave


@dataclass
class Phase:
    name: str
    figures: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)  # (what, passed, detail)
    seconds: float = 0.0

    def check(self, what: str, passed: bool, detail: str = ""):
        self.checks.append((what, bool(passed), detail))

    @property
    def passed(self) -> bool:
        return all(ok for _, ok, _ in self.checks)


def ms(seconds) -> float | None:
    return None if seconds is None else round(seconds * 1e3, 1)


def address(group: int, n: int) -> str:
    """A visitor's address behind the suite's trusted proxy hop."""
    return f"10.{group}.{n // 250 % 250}.{n % 250 + 1}"


def question(rng: random.Random, max_bytes: int) -> str:
    """A prompt of 10 to `max_bytes` bytes (one byte is one token), with markup, accents, emoji and bidi."""
    words = ["why", "is", "the", "sky", "blue", "tokens", "cache", "<b>", "é", "🙂", "\u202e", "kv"]
    text, target = "", rng.randint(10, max_bytes)
    while len((text + " x").encode()) < target:
        word = rng.choice(words)
        if len((text + " " + word).encode()) > target:
            break
        text = f"{text} {word}" if text else word
    return text


def get(server: Server, path: str, headers: dict | None = None, method="GET", body: bytes | None = None):
    """(status, headers, body) of one raw HTTP request; never raises on a status."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def wait_until_idle(server: Server, phase: Phase, baseline: dict, timeout: float = SETTLE_S):
    """Wait for the engine to hold nothing and the worker to shed what the
    clients cost; record the figures after and check them against `baseline`."""
    deadline = time.monotonic() + timeout
    start = time.monotonic()
    while True:
        engine, now = server.metrics(), server.sample()
        settled = (engine["running"] == engine["waiting"] == engine["kv_usage"] == 0
                   and now["threads"] <= baseline["threads"] and now["files"] <= baseline["files"]
                   and now["rss_mb"] <= baseline["rss_mb"] * 1.05)
        if settled or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    phase.figures.update({
        "threads before/after": f"{baseline['threads']} / {now['threads']}",
        "open files before/after": f"{baseline['files']} / {now['files']}",
        "RSS MB before/after": f"{baseline['rss_mb']:.0f} / {now['rss_mb']:.0f}",
        "settled in s": round(time.monotonic() - start, 1),
    })
    phase.check("no request left running or waiting, no KV held", engine["running"] == engine["waiting"] == 0
                and engine["kv_usage"] == 0, str(engine))
    phase.check("threads back to baseline", now["threads"] <= baseline["threads"], f"{now['threads']}")
    phase.check("open files back to baseline", now["files"] <= baseline["files"], f"{now['files']}")
    phase.check("RSS within 5 % of baseline", now["rss_mb"] <= baseline["rss_mb"] * 1.05, f"{now['rss_mb']:.0f} MB")


def warm_pool(server: Server, connections: int):
    """gunicorn's gthread worker keeps every thread it ever started (up to
    WF_THREADS): open `connections` sockets at once first, so the baseline
    already has the pool a crowd of that size needs and only leaks show."""
    sockets = [Client.connect(server.ws) for _ in range(connections)]
    time.sleep(0.5)
    for ws in sockets:
        ws.close()
    time.sleep(1.0)


# ---------------------------------------------------------------- load

def load(server: Server, p) -> Phase:
    phase = Phase("load")
    rng = random.Random(1)
    deadline = time.monotonic() + p.load_s
    outcomes, health = [], []
    lock = threading.Lock()
    before = server.metrics()
    started = time.monotonic()

    def visitor(kind: str, n: int, seed: int):
        r = random.Random(seed)
        time.sleep(r.uniform(0, min(5.0, p.load_s / 4)))  # arrivals spread at random
        while time.monotonic() < deadline:
            max_tokens = r.randint(8, p.max_tokens)
            if kind == "ws":
                outcome = ask_ws(server.ws, address(1, n), question(r, p.prompt_bytes), max_tokens)
            else:
                outcome = ask_api("127.0.0.1", server.port, address(2, n), question(r, p.prompt_bytes), max_tokens)
            with lock:
                outcomes.append(outcome)
            time.sleep(r.expovariate(1.0))  # a visitor reads before asking again

    def watch_health():
        while time.monotonic() < deadline:
            t = time.perf_counter()
            status = get(server, "/health")[0]
            health.append((time.perf_counter() - t, status))
            time.sleep(0.1)

    threads = [threading.Thread(target=visitor, args=("ws", n, rng.random())) for n in range(p.load_ws)]
    threads += [threading.Thread(target=visitor, args=("api", n, rng.random())) for n in range(p.load_api)]
    threads.append(threading.Thread(target=watch_health))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    after = server.metrics()

    ok = [o for o in outcomes if o.result == OK]
    failed = [o for o in outcomes if o.result == FAILED]
    ttfts = [o.ttft_s for o in ok if o.ttft_s is not None]
    gaps = [g for o in ok for g in o.gaps_s]
    latencies = [t for t, _ in health]
    phase.figures.update({
        "visitors (page + API)": f"{p.load_ws} + {p.load_api} for {p.load_s} s",
        "requests served (page / API)": f"{sum(o.kind == 'ws' for o in ok)} / {sum(o.kind == 'api' for o in ok)}",
        "rejected (busy / 429)": sum(o.result == REJECTED for o in outcomes),
        "failed": len(failed),
        "TTFT p50 / p99 ms": f"{ms(percentile(ttfts, 0.5))} / {ms(percentile(ttfts, 0.99))}",
        "ITL p50 / p99 ms": f"{ms(percentile(gaps, 0.5))} / {ms(percentile(gaps, 0.99))}",
        "/health p50 / p99 / max ms": f"{ms(percentile(latencies, 0.5))} / {ms(percentile(latencies, 0.99))} / "
                                      f"{ms(max(latencies, default=None))}",
        "whole-factory tokens/s (typed / prompt tokens read)": f"{(after['tokens'] - before['tokens']) / elapsed:.1f}"
                                                                f" / {(after['prompt'] - before['prompt']) / elapsed:.1f}",
    })
    phase.check("requests were served", len(ok) > 0)
    phase.check("every request completed with its tokens or was told to retry", not failed,
                "; ".join(sorted({o.detail for o in failed}))[:300])
    phase.check("no 5xx", not any((o.status or 0) >= 500 and o.result != REJECTED for o in outcomes)
                and all(s < 500 for _, s in health))
    phase.check("/health p99 < 200 ms", percentile(latencies, 0.99) < 0.2, f"{ms(percentile(latencies, 0.99))} ms")
    return phase


# ---------------------------------------------------------------- faults

def vanish(server: Server, n: int, max_tokens: int) -> bool:
    """A client that leaves after two tokens of a longer answer, four ways in
    turn; False if it never got that far (refused, or the answer was short)."""
    way = n % 4
    if way < 2:  # a page: closed socket, or reset connection
        ws = RawSocket("127.0.0.1", server.port, {"X-Forwarded-For": address(3, n)})
        ws.send_json({"type": "generate", "prompt": "leaving soon", "max_tokens": max_tokens})
        tokens = 0
        while tokens < 2:
            message = ws.read_message()
            if message is None or message["type"] in ("done", "error", "busy"):
                break
            tokens += message["type"] == "token"
        ws.vanish(reset=way == 1)
        return tokens == 2
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)  # an API stream, half read
    body = json.dumps({"model": "tiny", "prompt": "leaving soon", "max_tokens": max_tokens, "stream": True}).encode()
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"X-Forwarded-For: " + address(3, n).encode() + b"\r\nContent-Length: " + str(len(body)).encode() +
                 b"\r\n\r\n" + body)
    received = b""
    while received.count(b"data: ") < 2:
        chunk = sock.recv(4096)
        if not chunk:
            break
        received += chunk
    drop(sock, reset=way == 3)
    return received.count(b"data: ") >= 2


def faults(server: Server, p) -> Phase:
    phase = Phase("faults")
    warm_pool(server, p.fault_pool)
    baseline = server.sample()
    with ThreadPoolExecutor(p.fault_concurrency) as pool:
        left = list(pool.map(vanish, [server] * p.vanish, range(p.vanish), [p.vanish_tokens] * p.vanish))
    # Clients that stay: some stop reading mid-answer, some never send anything at all.
    stalled = []
    for n in range(p.stall):
        ws = RawSocket("127.0.0.1", server.port, {"X-Forwarded-For": address(4, n)})
        ws.send_json({"type": "generate", "prompt": "then I stop reading", "max_tokens": p.vanish_tokens})
        stalled.append(ws.sock)  # never read again, never closed: its pings go unanswered too
    silent_ws, silent_tcp = [], []
    for n in range(p.silent):
        if n % 2:
            silent_tcp.append(socket.create_connection(("127.0.0.1", server.port)))  # not even an HTTP request
        else:
            silent_ws.append(RawSocket("127.0.0.1", server.port, {"X-Forwarded-For": address(5, n)}).sock)
    held = time.monotonic()
    time.sleep(p.hold_s / 2)
    during = server.metrics()
    time.sleep(p.hold_s / 2)  # by now every WebSocket has missed at least one pong
    dropped = sum(closed_by_server(sock) for sock in stalled + silent_ws)
    for sock in stalled + silent_ws + silent_tcp:
        sock.close()
    phase.figures.update({
        "vanished mid-answer (closed / reset / half-read SSE / reset SSE)": p.vanish,
        "stopped reading / never sent": f"{p.stall} / {p.silent}, held {time.monotonic() - held:.0f} s",
        "engine while they were held": f"running {during['running']:.0f}, waiting {during['waiting']:.0f}",
        "WebSockets the server dropped for unanswered pings": f"{dropped} of {len(stalled) + len(silent_ws)}",
    })
    phase.check("every WebSocket that never answered a ping was dropped by the server",
                dropped == len(stalled) + len(silent_ws), f"{dropped}")
    phase.check("every vanishing client left mid-answer (after 2 of its tokens)", all(left),
                f"{sum(left)} of {len(left)}")
    wait_until_idle(server, phase, baseline)
    return phase


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has closed this connection (whatever it sent before is read and dropped)."""
    sock.settimeout(2)
    try:
        while sock.recv(1 << 16):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


# ---------------------------------------------------------------- bad input

BAD_WS = [  # (what, frame opcode, payload, the error's words or a close code)
    ("not JSON", TEXT, b"hello", "not valid JSON"),
    ("binary frame", BINARY, b"\x00\x01", "binary messages are not accepted"),
    ("invalid UTF-8 in a text frame", TEXT, b'{"type": "generate", "prompt": "\xff\xfe"}', 1007),
    ("lone surrogate in the prompt", TEXT, b'{"type": "generate", "prompt": "a\\ud800b"}', "not valid Unicode"),
    ("NaN", TEXT, b'{"type": "generate", "prompt": "x", "temperature": NaN}', "NaN is not a number"),
    ("a 5,000-digit number", TEXT, b'{"type": "generate", "prompt": "x", "max_tokens": 1' + b"0" * 5000 + b"}",
     "number too long"),
    ("1e999", TEXT, b'{"type": "generate", "prompt": "x", "temperature": 1e999}', "finite number"),
    ("nested 100,000 deep", TEXT, b"[" * 30000 + b"]" * 30000, "nested too deeply"),
    ("unknown type", TEXT, b'{"type": "shutdown"}', "unknown message type"),
    ("unknown field", TEXT, b'{"type": "generate", "prompt": "x", "base_url": "http://x"}', "unknown field"),
    ("empty prompt", TEXT, b'{"type": "generate", "prompt": ""}', "prompt is empty"),
    ("prompt beyond the context", TEXT, json.dumps({"type": "generate", "prompt": "x" * 5000}).encode(),
     "the context holds"),
    ("max_tokens as a string", TEXT, b'{"type": "generate", "prompt": "x", "max_tokens": "5"}', "max_tokens must"),
    ("oversized frame", TEXT, b'{"type": "generate", "prompt": "' + b"x" * 70000 + b'"}', 1009),
]

BAD_API = [  # (what, method, path, body, headers, status)
    ("not JSON", "POST", "/v1/completions", b"{nope", {}, 400),
    ("NaN", "POST", "/v1/completions", b'{"model": "tiny", "prompt": "x", "temperature": NaN}', {}, 400),
    ("invalid UTF-8", "POST", "/v1/completions", b'{"model": "tiny", "prompt": "\xff"}', {}, 400),
    ("lone surrogate", "POST", "/v1/completions", b'{"model": "tiny", "prompt": "\\udc00"}', {}, 400),
    ("5,000-digit number", "POST", "/v1/completions",
     b'{"model": "tiny", "prompt": "x", "max_tokens": 1' + b"0" * 5000 + b"}", {}, 400),
    ("nested deep", "POST", "/v1/completions", b"[" * 30000 + b"]" * 30000, {}, 400),
    ("body over 1 MiB", "POST", "/v1/completions", b" " * (1024 * 1024 + 1), {}, 413),
    ("unknown model", "POST", "/v1/completions", b'{"model": "gpt-5", "prompt": "x"}', {}, 404),
    ("wrong method", "GET", "/v1/completions", None, {}, 405),
    ("unknown API path", "GET", "/v1/nothing", None, {}, 404),
    ("unknown run", "GET", "/r/AAAAAAAAAAAAAAAA", None, {}, 404),
    ("malformed run id", "GET", "/r/%00%ff<script>", None, {}, 404),
    ("traversal in a run URL", "GET", "/r/..%2F..%2Fapp%2Fconfig.py", None, {}, 404),
    ("traversal in a static URL", "GET", "/static/..%2F..%2Fapp%2Fconfig.py", None, {}, 404),
    ("traversal, raw dots", "GET", "/static/../../app/config.py", None, {}, 404),
    ("embed: invalid percent-encoding", "GET", "/embed?prompt=%ff%fe%zz", None, {}, 200),
    ("embed: NUL in the prompt", "GET", "/embed?prompt=a%00b", None, {}, 200),
    ("embed: a 3,000-character prompt", "GET", "/embed?prompt=" + "x" * 3000, None, {}, 400),
    ("embed: a 100 KB query string", "GET", "/embed?prompt=" + "x" * 100_000, None, {}, 414),  # gunicorn's limit
    ("embed: max_tokens 1e309", "GET", "/embed?prompt=x&max_tokens=1e309", None, {}, 400),
    ("embed: theme markup", "GET", "/embed?prompt=x&theme=%3Cscript%3E", None, {}, 400),
    ("embed: run traversal", "GET", "/embed?run=../../etc/passwd", None, {}, 404),
    ("embed: run and prompt repeated", "GET", "/embed?run=a&run=b&prompt=x", None, {}, 400),
    ("oembed: foreign URL", "GET", "/oembed?url=http%3A%2F%2Fevil.example%2Fr%2FAAAAAAAAAAAAAAAA", None, {}, 404),
    ("client times: no key", "POST", "/r/AAAAAAAAAAAAAAAA/client-times", b"{}", {}, 404),
    ("header abuse: 10 KB cookie", "GET", "/embed?prompt=x", None, {"Cookie": "a=" + "x" * 10_000}, 431),
    ("header abuse: garbage X-Forwarded-For", "GET", "/health", None, {"X-Forwarded-For": "<script>, ::::, 999.1"}, 200),
    ("header abuse: odd Host", "GET", "/embed?prompt=x", None, {"Host": "evil.example:99999"}, 200),
]


def last_message(ws: RawSocket, limit: int = 200) -> dict:
    """Read an answer through its done or error ({"type": "closed"} if the socket closes)."""
    for _ in range(limit):
        message = ws.read_message()
        if message is None or message["type"] in ("done", "error", "busy"):
            return message or {"type": "closed"}
    return {"type": f"no end within {limit} messages"}


def bad_input(server: Server, p) -> Phase:
    phase = Phase("bad input")
    for what, opcode, payload, expected in BAD_WS:
        ws = RawSocket("127.0.0.1", server.port, {"X-Forwarded-For": address(6, 1)})
        ws.send_frame(opcode, payload)
        message = ws.read_message()
        if isinstance(expected, int):  # the socket closes with this code
            passed, got = message is None and ws.close_code == expected, f"close {getattr(ws, 'close_code', None)}"
        else:
            passed = message is not None and message["type"] == "error" and expected in message["message"]
            ws.send_json({"type": "generate", "prompt": "still usable?", "max_tokens": 2})  # and it carries on
            passed = passed and last_message(ws)["type"] == "done"
            got = (message or {}).get("message", "closed")
        ws.vanish()
        phase.check(f"page: {what}", passed, got[:120])
    for what, method, path, body, headers, expected in BAD_API:
        status, response_headers, text = get(server, path, {"X-Forwarded-For": address(6, 2), **headers},
                                             method, body)
        clean = status < 500 and b"Traceback" not in text
        if path.startswith("/v1/") and status >= 400:
            clean = clean and "error" in json.loads(text)
        phase.check(f"{method} {what}", clean and status == expected, f"{status}")
    phase.figures["cases"] = len(BAD_WS) + len(BAD_API)
    phase.figures["answered as documented"] = sum(ok for _, ok, _ in phase.checks)
    engine = server.metrics()
    phase.check("no request left running after all of it", engine["running"] == engine["waiting"] == 0, str(engine))
    return phase


# ---------------------------------------------------------------- security

NASTY = "<img src=/pwned onerror=\"fetch('/pwned')\"><script>fetch('/pwned')</script>\u202eevil\u202c \x1b[31m\x00 ]]> {{7*7}}"


def security(server: Server, p, browser_check) -> Phase:
    phase = Phase("security")
    # 1. No visitor input reaches a URL the server fetches: a canary listens for any connection.
    canary = socket.socket()
    canary.bind(("127.0.0.1", 0))
    canary.listen()
    canary.settimeout(0.1)
    target = f"http://127.0.0.1:{canary.getsockname()[1]}"
    ws = RawSocket("127.0.0.1", server.port, {"X-Forwarded-For": address(7, 1)})
    for message in ({"type": "generate", "prompt": target, "base_url": target},
                    {"type": "generate", "prompt": f"fetch {target}/v1", "max_tokens": 2}):
        ws.send_json(message)
        last_message(ws)
    ws.vanish()
    for path, body in (("/v1/completions", {"model": target, "prompt": "x"}),
                       ("/v1/completions", {"model": "tiny", "prompt": target, "max_tokens": 2,
                                            "base_url": target, "api_base": target})):
        get(server, path, {"X-Forwarded-For": address(7, 2), "Content-Type": "application/json",
                           "X-Forwarded-Host": target, "Referer": target}, "POST", json.dumps(body).encode())
    for path in (f"/oembed?url={urllib.parse.quote(target)}/r/AAAAAAAAAAAAAAAA", f"/embed?run={target}",
                 f"/embed?prompt={urllib.parse.quote(target)}"):
        get(server, path, {"X-Forwarded-Host": target[7:]})
    time.sleep(1.0)
    try:
        canary.accept()
        fetched = True
    except TimeoutError:
        fetched = False
    canary.close()
    phase.check("no visitor-supplied URL is ever fetched by the server", not fetched)

    # 2. Only /embed and /r/<id> may be framed; every page carries the CSP.
    run_id = store_nasty_run(server)
    frameable = {"/embed?prompt=x", f"/r/{run_id}"}
    for path in sorted(frameable | {"/", f"/r/{run_id}/run.json", "/health", "/v1/models", "/nothing"}):
        headers = get(server, path)[1]
        csp = headers.get("Content-Security-Policy", "")
        if path in frameable:
            ok = "frame-ancestors *" in csp and "X-Frame-Options" not in headers
        else:
            ok = "frame-ancestors 'self'" in csp and headers.get("X-Frame-Options") == "SAMEORIGIN"
        phase.check(f"framing rule and CSP on {path.split('?')[0]}", ok and "script-src 'self'" in csp, csp[-40:])

    # 3. A foreign page's WebSocket is refused before the upgrade.
    foreign = RawSocket("127.0.0.1", server.port, {"Origin": "https://evil.example"})
    phase.check("a foreign Origin's WebSocket gets 403", foreign.status == 403, str(foreign.status))
    foreign.vanish()

    # 4. Markup, control characters and bidi overrides render inertly, in a real browser.
    browser_check(server, phase, run_id, NASTY)
    return phase


def store_nasty_run(server: Server) -> str:
    """A recorded run whose prompt and answer are all markup and control characters."""
    from app.runs import RunStore, new_id

    run_id = new_id()
    messages = [{"type": "queued", "t_ms": 0.1, "position": 1},
                {"type": "tokenized", "t_ms": 0.2, "ids": [60, 98], "pieces": ["<", "b"]},
                {"type": "prefilled", "t_ms": 5.0, "prompt_tokens": 2, "kv_bytes": 147456}]
    for i, piece in enumerate([NASTY[j:j + 9] for j in range(0, len(NASTY), 9)]):
        messages.append({"type": "token", "t_ms": 6.0 + i, "index": i, "id": 60, "text": piece,
                         "kv_bytes": 147456 + 73728 * (i + 1)})
    n = len(messages) - 3
    messages.append({"type": "done", "t_ms": 7.0 + n, "finish_reason": "length",
                     "stats": {"prompt_tokens": 2, "output_tokens": n, "total_ms": 7.0 + n}})
    RunStore(str(server.db), 10_000, 1 << 30).save("gpt2-small", NASTY, {"max_tokens": n, "remote": False},
                                                    messages, run_id, "key")
    return run_id


# ---------------------------------------------------------------- persistence

def persistence(server: Server, p) -> Phase:
    phase = Phase("persistence")
    saved, stop = [], threading.Event()
    lock = threading.Lock()

    def keep_asking(n: int):
        """Ask short questions until stopped; collect the ids of runs reported saved.
        A raw socket, closed however the server's death surprises it."""
        r = random.Random(n)
        for attempt in range(10**6):
            if stop.is_set():
                return
            try:  # a new visitor each time, so the per-address limit never decides the count
                ws = RawSocket("127.0.0.1", server.port, {"X-Forwarded-For": address(8, n * 10**4 + attempt)},
                               timeout=10)
            except OSError:
                continue  # the server is gone: keep trying until told to stop
            try:
                ws.send_json({"type": "generate", "prompt": question(r, p.prompt_bytes), "max_tokens": r.randint(2, 16)})
                done = last_message(ws)
            except OSError:
                done = {}
            finally:
                ws.vanish()
            if done.get("run_id"):
                with lock:
                    saved.append(done["run_id"])

    askers = [threading.Thread(target=keep_asking, args=(n,)) for n in range(p.persistence_clients)]
    for t in askers:
        t.start()
    deadline = time.monotonic() + 60
    while len(saved) < p.persistence_runs and time.monotonic() < deadline:
        time.sleep(0.05)
    with lock:
        reported = list(saved)  # runs the clients were told were saved before the kill
    server.kill()
    stop.set()
    for t in askers:
        t.join()
    db = sqlite3.connect(server.db)
    integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    rows = db.execute("SELECT id, messages FROM runs").fetchall()
    db.close()
    whole = sum(1 for _, text in rows if json.loads(text)[-1]["type"] == "done")
    server.start()
    readable = sum(get(server, f"/r/{run_id}/run.json")[0] == 200 for run_id in reported)
    phase.figures.update({"runs reported saved before SIGKILL": len(reported), "rows after restart": len(rows),
                          "readable after restart": readable})
    phase.check("the database opens cleanly (integrity_check ok)", integrity == "ok", integrity)
    phase.check("every run reported saved is readable", readable == len(reported) > 0, f"{readable}/{len(reported)}")
    phase.check("no run is half-written", whole == len(rows), f"{whole}/{len(rows)}")
    return phase


# ---------------------------------------------------------------- soak

def soak(server: Server, p) -> Phase:
    phase = Phase("soak")
    warm_pool(server, p.fault_pool)
    kinds = ["short"] * p.soak_short + ["abort"] * p.soak_abort
    random.Random(2).shuffle(kinds)
    samples, failed = [], []

    def one(n: int, kind: str):
        if kind == "short":
            outcome = ask_ws(server.ws, address(9, n), "a short one", 4)
            if outcome.result != OK:
                failed.append(outcome.detail)
        else:
            if not vanish(server, 4 * n + n % 2, p.vanish_tokens):  # a page leaving mid-answer, closed or reset
                failed.append("an aborting client never got two tokens")
        if n % 100 == 99:
            samples.append(server.sample())

    baseline = server.sample()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(len(kinds)), kinds))
    phase.figures.update({"short generations / aborted": f"{p.soak_short} / {p.soak_abort}", "failed": len(failed),
                          "RSS MB every 100 requests": " ".join(f"{s['rss_mb']:.0f}" for s in samples),
                          "threads every 100 requests": " ".join(str(s["threads"]) for s in samples)})
    phase.check("every short generation completed, every aborted one got going", not failed, "; ".join(failed[:3]))
    wait_until_idle(server, phase, baseline)
    return phase
