"""What the phases share: the Phase record of figures and checks, visitor
addresses and questions, raw HTTP, and the baseline of the worker's threads,
files and memory that every client must leave as it found it."""

import random
import time
from dataclasses import dataclass, field

from simple_websocket import Client

from ..http import request
from .rawws import RawSocket
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
    """(status, headers, body) of one raw HTTP request to the server; never raises on a status."""
    return request(f"http://127.0.0.1:{server.port}{path}", method, body, headers, timeout=30)


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


def last_message(ws: RawSocket, limit: int = 200) -> dict:
    """Read an answer through its done or error ({"type": "closed"} if the socket closes)."""
    for _ in range(limit):
        message = ws.read_message()
        if message is None or message["type"] in ("done", "error", "busy"):
            return message or {"type": "closed"}
    return {"type": f"no end within {limit} messages"}
