"""Persistence: SIGKILL while runs are saved; the database afterwards."""

import json
import random
import sqlite3
import threading
import time

from .phase import Phase, address, get, last_message, question
from .rawws import RawSocket
from .server import Server


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
