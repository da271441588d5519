"""Per-address limit on new generations: a token bucket per client address
holding `per_minute` generations, refilled evenly over the minute. Shared by
the WebSocket and the API, so one visitor cannot dodge it by switching."""

import math
import threading
import time

from flask import current_app, request

MAX_ADDRESSES = 10_000  # past this, addresses whose buckets are full again are forgotten
EXTENSION = "word_factory.rate_limit"


def init_app(app):
    app.extensions[EXTENSION] = RateLimiter(app.config["RATE_LIMIT_PER_MINUTE"])


def rate_limited() -> int | None:
    """Count a new generation against this request's client address (behind
    trusted proxies, the one ProxyFix found): None if allowed, else the
    seconds until one is."""
    return current_app.extensions[EXTENSION].take(request.remote_addr or "unknown")


def rate_limit_text(seconds: int) -> str:
    return f"too many questions from your address: the next one is welcome in {seconds} s"


class RateLimiter:
    def __init__(self, per_minute: int, clock=time.monotonic):
        self.per_minute, self.clock = per_minute, clock
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, when counted)
        self._lock = threading.Lock()

    def take(self, address: str) -> int | None:
        """Count one generation for `address`: None if allowed, else the
        whole seconds to wait before the next one is. A limit of 0 is no limit."""
        if self.per_minute <= 0:
            return None
        now = self.clock()
        with self._lock:
            tokens = self._tokens(address, now)
            if tokens >= 1:
                self._buckets[address] = (tokens - 1, now)
                return None
            self._buckets[address] = (tokens, now)
            return max(1, math.ceil((1 - tokens) * 60 / self.per_minute))

    def _tokens(self, address: str, now: float) -> float:
        if address not in self._buckets and len(self._buckets) >= MAX_ADDRESSES:
            self._buckets = {a: b for a, b in self._buckets.items() if self._refilled(b, now) < self.per_minute}
        held, when = self._buckets.get(address, (self.per_minute, now))
        return self._refilled((held, when), now)

    def _refilled(self, bucket: tuple[float, float], now: float) -> float:
        held, when = bucket
        return min(self.per_minute, held + (now - when) * self.per_minute / 60)
