"""Soak: hundreds of short and aborted generations back to back; resources stay flat."""

import random
from concurrent.futures import ThreadPoolExecutor

from .clients import OK, ask_ws
from .faults import vanish
from .phase import Phase, address, wait_until_idle, warm_pool
from .server import Server


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
