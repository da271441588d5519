"""Load: crowds of page and API visitors arriving at random, /health watched throughout."""

import random
import threading
import time

from engine.stopwatch import percentile

from .clients import FAILED, OK, REJECTED, ask_api, ask_ws
from .phase import Phase, address, get, ms, question
from .server import Server


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
