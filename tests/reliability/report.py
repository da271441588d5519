"""The suite's output: each phase as text for the terminal, and the whole
run as docs/RELIABILITY.md (what each phase does, then the figures)."""

import os
import platform
import subprocess
import time

from .server import ROOT

INTRO = """# Reliability: the factory met by strangers

`python -m tests.reliability` starts the app under the repo's gunicorn
configuration (`gunicorn -c gunicorn.conf.py`: one worker, gthread) on a free
loopback port and runs six phases against it, then checks the server's log
for any traceback. Everything is bounded in time and count and stops by
itself; the default profile (the default model, GPT-2-small-shaped) takes
about four minutes on a 2-core machine. `--profile smoke` (the tiny model,
small counts, about 30 s) runs inside the test suite
(`tests/test_reliability.py`), so CI runs every phase on every change.
`--phases load,faults` runs some; `--report docs/RELIABILITY.md` rewrites
this file with the figures of the run.

The server runs with `WF_PROXY_HOPS=1` so each simulated visitor has its own
address (`X-Forwarded-For`, as behind a real proxy) and the per-address rate
limit stays at its default (60 generations a minute), and with
`WF_WS_PING_INTERVAL` at 5 s (1 s in smoke) so that clients that never answer
a ping are dropped within the run. Every other setting is the default.

| phase | what it does | what must hold |
|---|---|---|
| load | 32 page visitors (WebSocket) and 16 streaming API clients for 60 s, arriving at random over the first 5 s, each asking again after a pause (exponential, mean 1 s); prompts of 10-400 bytes with markup, accents, emoji and bidi characters; 8-64 new tokens; `/health` polled every 100 ms throughout | every request completes with exactly its tokens and finish "length", or gets `busy`/429 with a retry time; no 5xx; `/health` p99 < 200 ms |
| faults | 200 clients that leave after two tokens of a 200-token answer (closed socket, TCP reset, half-read SSE, reset SSE, in turn, 16 at a time); then 20 that stop reading mid-answer without closing and 20 that never send (10 bare TCP connections, 10 WebSockets that never answer a ping), held 12 s | afterwards no request running or waiting, no KV held, the worker's threads and open files back to their baseline and RSS within 5 % |
| bad input | 45 cases over the WebSocket (not JSON, binary, invalid UTF-8, lone surrogates, NaN, 5,000-digit numbers, 1e999, 30,000-deep nesting, unknown types and fields, oversized frames...) and HTTP (the same in API bodies, 1 MiB+ bodies, wrong methods, unknown runs, path traversal in run and static URLs, query-string abuse on `/embed` and `/r/<id>`, bad share and oEmbed requests, 10 KB headers, forged forwarding headers, odd Host) | each gets its documented answer (an `error` and the socket stays usable, a close code, or a 4xx with a clear body; 501 for an oEmbed format not served); no other 5xx, no traceback, no request left running |
| security | visitor input naming a canary URL everywhere (prompt, unknown fields, model, headers, oEmbed and embed parameters); framing headers and CSP on every kind of page; a foreign Origin's WebSocket; a stored run whose prompt and answer are markup, control characters and bidi overrides, replayed on `/r/<id>` and `/embed` in real Chromium under the pages' own CSP | the canary is never contacted; only `/embed` and `/r/<id>` may be framed by others; 403 before the upgrade; the text shows character for character with no element made from it, nothing it tried to fetch, no console error or CSP violation |
| persistence | 8 clients asking short questions; after 40 runs were reported saved (their `done` carried a `run_id`), SIGKILL to gunicorn and its worker mid-stream; restart on the same database | `PRAGMA integrity_check` ok; every run reported saved is readable at `/r/<id>/run.json`; every row is whole (its messages end with `done`) |
| soak | 500 short generations (4 tokens) and 200 aborted ones (left after two tokens, closed or reset), shuffled, 4 at a time | every one behaves; afterwards threads, files and KV back to baseline, RSS within 5 % |

Baselines are taken after warming gunicorn's thread pool to 64 threads
(gthread keeps every thread it starts, up to `WF_THREADS`), so only what a
client leaves behind shows.

## Figures of the last run
"""


def format_phase(phase) -> str:
    lines = [f"\n== {phase.name} ({phase.seconds:.0f} s): {'PASS' if phase.passed else 'FAIL'}"]
    lines += [f"   {k:<52} {v}" for k, v in phase.figures.items()]
    lines += [f"   [{'ok' if ok else 'FAIL'}] {what}" + (f" -- {detail}" if detail and not ok else "")
              for what, ok, detail in phase.checks]
    return "\n".join(lines)


def markdown(results: list, profile_name: str, seconds: float) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or "unknown"
    verdict = "all checks passed" if all(p.passed for p in results) else "SOME CHECKS FAILED"
    lines = [INTRO, f"Commit `{commit}`, profile `{profile_name}`, {time.strftime('%Y-%m-%d')}, "
                    f"{platform.machine()} Linux with {len(os.sched_getaffinity(0))} cores, {seconds:.0f} s in all: **{verdict}**.", ""]
    for phase in results:
        lines += [f"### {phase.name}: {'pass' if phase.passed else 'FAIL'} ({phase.seconds:.0f} s)", "",
                  "| figure | value |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in phase.figures.items()]
        failed = [what for what, ok, _ in phase.checks if not ok]
        lines += ["", f"{len(phase.checks) - len(failed)} of {len(phase.checks)} checks passed"
                  + (": failed: " + "; ".join(failed) if failed else "."), ""]
    return "\n".join(lines)
