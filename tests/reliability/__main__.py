"""`python -m tests.reliability [--profile default|smoke] [--phases ...] [--report PATH]`

Starts the app under the repo's gunicorn configuration on a free loopback
port, runs the phases in order (load, faults, bad_input, security,
persistence, soak), prints each phase's figures and checks, and exits 1 if
any check failed. Everything is bounded in time and count; the default
profile takes about four minutes on a 2-core machine. `--report` writes the
markdown of docs/RELIABILITY.md's figures.

The server runs with WF_PROXY_HOPS=1 so each simulated visitor has its own
address (X-Forwarded-For), as behind a real proxy, and the per-address rate
limit stays at its default; WF_WS_PING_INTERVAL is the profile's, so clients
that never answer pings are dropped within the run.
"""

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .bad_input import bad_input
from .faults import faults
from .load import load
from .persistence import persistence
from .phase import Phase
from .security import security
from .soak import soak
from .browser_checks import render_inertly
from .report import format_phase, markdown
from .server import Server


@dataclass(frozen=True)
class Profile:
    model: str
    load_ws: int  # page visitors during the load phase
    load_api: int  # streaming API clients during the load phase
    load_s: int
    max_tokens: int  # the most a load visitor asks for (each asks 8..max_tokens)
    prompt_bytes: int  # the longest prompt (prompts are 10..prompt_bytes bytes, so tokens)
    vanish: int  # clients that leave mid-answer
    vanish_tokens: int  # the answer they ask for (and leave after 2 tokens of)
    stall: int  # clients that stop reading without closing
    silent: int  # clients that connect and never send
    hold_s: float  # how long the stalled and silent clients are held open
    ping_interval: int
    fault_pool: int  # the worker's thread pool is warmed to this many before baselines
    fault_concurrency: int
    persistence_clients: int
    persistence_runs: int  # runs reported saved before the SIGKILL
    soak_short: int
    soak_abort: int


PROFILES = {
    "default": Profile("gpt2-small", load_ws=32, load_api=16, load_s=60, max_tokens=64, prompt_bytes=400, vanish=200, vanish_tokens=200, stall=20,
                       silent=20, hold_s=12, ping_interval=5, fault_pool=64, fault_concurrency=16,
                       persistence_clients=8, persistence_runs=40, soak_short=500, soak_abort=200),
    "smoke": Profile("tiny", load_ws=4, load_api=2, load_s=4, max_tokens=32, prompt_bytes=90, vanish=20, vanish_tokens=100, stall=2, silent=2,
                     hold_s=4, ping_interval=1, fault_pool=16, fault_concurrency=4, persistence_clients=2,
                     persistence_runs=10, soak_short=40, soak_abort=16),
}
# Each phase runs against the live server with the profile and returns a Phase of figures and checks.
PHASES = {"load": load, "faults": faults, "bad_input": bad_input,
          "security": lambda server, profile: security(server, profile, render_inertly),
          "persistence": persistence, "soak": soak}


def run(profile: Profile, names: list[str], workdir: Path, out=print) -> list[Phase]:
    server = Server(workdir, profile.model, {"PROXY_HOPS": 1, "WS_PING_INTERVAL": profile.ping_interval})
    results = []
    server.start()
    try:
        for name in names:
            started = time.monotonic()
            phase = PHASES[name](server, profile)
            phase.seconds = time.monotonic() - started
            out(format_phase(phase))
            results.append(phase)
        final = Phase("server log")
        problems = server.log_problems()
        final.check("no traceback or unhandled error in the server's log", not problems, "; ".join(problems[:3]))
        results.append(final)
        out(format_phase(final))
    finally:
        server.stop()
    return results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.reliability", description=__doc__.split("\n\n")[1])
    p.add_argument("--profile", choices=sorted(PROFILES), default="default")
    p.add_argument("--phases", default=",".join(PHASES), help="comma-separated, in order (default: all)")
    p.add_argument("--report", type=Path, help="write the figures as markdown here")
    p.add_argument("--json", action="store_true", help="print every phase as JSON at the end")
    args = p.parse_args(argv)
    names = [n.strip() for n in args.phases.split(",") if n.strip()]
    unknown = sorted(set(names) - set(PHASES))
    if unknown:
        p.error(f"unknown phase(s) {', '.join(unknown)}; choose from {', '.join(PHASES)}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="wf-reliability-") as workdir:
        results = run(PROFILES[args.profile], names, Path(workdir))
    seconds = time.monotonic() - started
    print(f"\n{sum(p.passed for p in results)} of {len(results)} phases passed in {seconds:.0f} s")
    if args.report:
        args.report.write_text(markdown(results, args.profile, seconds))
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=1, default=str))
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
