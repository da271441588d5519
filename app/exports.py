"""A recorded run as files people can take away: one row per token (CSV) and
a Chrome/Perfetto trace. Pure functions over the run dict of app/runs.py.

Times are milliseconds since the server received the request (server clock)
and, where the visitor shared them, since they pressed Enter (browser clock).
"""

import csv
import io

CSV_COLUMNS = ["index", "text", "server_ms", "client_ms", "gap_ms", "kv_bytes"]
# Spreadsheets run a cell starting with one of these as a formula; model output
# can start with anything, so such cells get a leading apostrophe (OWASP's advice).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def tokens(run: dict) -> list[dict]:
    """One row per token: its text, when the server made it, when the browser
    got it (None unless shared), the gap since the previous token, KV bytes."""
    client = run.get("client_ms")
    rows, previous = [], None
    for i, message in enumerate(run["messages"]):
        if message["type"] != "token":
            continue
        server_ms = message["t_ms"]
        rows.append({"index": message["index"], "text": message["text"], "server_ms": server_ms,
                     "client_ms": client[i] if client else None,
                     "gap_ms": None if previous is None else server_ms - previous, "kv_bytes": message["kv_bytes"]})
        previous = server_ms
    return rows


def to_csv(run: dict) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in tokens(run):
        text = row["text"]
        writer.writerow({**row, "text": "'" + text if text.startswith(FORMULA_START) else text})
    return out.getvalue()


def to_trace(run: dict) -> dict:
    """Chrome's trace event format (opens in ui.perfetto.dev and chrome://tracing):
    complete events for waiting, chop, prefill and each decode step on the
    request's thread, a counter track for its KV bytes, and the browser's
    arrival of each token on a second thread when the visitor shared them."""
    us = lambda ms: round(ms * 1000, 3)  # noqa: E731 -- the format counts microseconds
    pid, tid, browser_tid = 1, 1, 2
    events = [
        {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"Word Factory ({run['model']})"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"request {run['id']}"}},
    ]

    def span(name, start_ms, end_ms, **args):
        events.append({"ph": "X", "name": name, "cat": "engine", "pid": pid, "tid": tid, "ts": us(start_ms),
                       "dur": us(max(0.0, end_ms - start_ms)), "args": args})

    def kv(t_ms, kv_bytes):
        if kv_bytes is not None:
            events.append({"ph": "C", "name": "KV cache bytes", "pid": pid, "ts": us(t_ms), "args": {"bytes": kv_bytes}})

    by_type = {}
    for message in run["messages"]:
        by_type.setdefault(message["type"], message)
    done = by_type.get("done") or {}
    chop_ms = ((done.get("stats") or {}).get("chop_ms")) or 0.0
    if "tokenized" in by_type:
        tokenized_ms = by_type["tokenized"]["t_ms"]
        span("wait in line", 0.0, tokenized_ms - chop_ms)
        span("chop (tokenize)", tokenized_ms - chop_ms, tokenized_ms, tokens=len(by_type["tokenized"]["ids"]))
        if "prefilled" in by_type:
            prefilled = by_type["prefilled"]
            span("read (prefill)", tokenized_ms, prefilled["t_ms"], prompt_tokens=prefilled["prompt_tokens"])
            kv(prefilled["t_ms"], prefilled["kv_bytes"])
    previous_ms = by_type.get("prefilled", {}).get("t_ms")
    for row in tokens(run):
        start = row["server_ms"] if previous_ms is None else previous_ms
        span(f"type token {row['index']}", start, row["server_ms"], text=row["text"], kv_bytes=row["kv_bytes"])
        kv(row["server_ms"], row["kv_bytes"])
        previous_ms = row["server_ms"]
        if row["client_ms"] is not None:
            events.append({"ph": "i", "s": "t", "name": f"arrived token {row['index']}", "pid": pid,
                           "tid": browser_tid, "ts": us(row["client_ms"])})
    if run.get("client_ms"):
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": browser_tid,
                       "args": {"name": "browser (ms since Enter)"}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"run": run["id"], "model": run["model"], "clock": "ms since the server got the request"}}
