"""`python -m app.bench`: time any OpenAI-compatible server from the user's side.

Sends streamed completions with the official `openai` SDK (temperature 0,
stream_options.include_usage) and stamps the arrival of every chunk that
carries choices. Works the same against this factory, vLLM, SGLang and
llama.cpp's server. One request prints SPEC.md's list; many requests
(--num-requests, --concurrency, --request-rate for Poisson arrivals) also
print throughput per person and for the whole server, in separate columns.
Warm-up requests (default 1) run first and are excluded, and labelled so.
"""

import argparse
import json
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import openai

from engine.questions import question
from engine.stopwatch import gaps, percentile


@dataclass
class Result:
    """One request as the client saw it; times in seconds."""

    start: float = 0.0  # since the run began
    ttft: float | None = None
    itls: list[float] = field(default_factory=list)
    latency: float | None = None  # send -> end of stream
    chunks: int = 0  # chunks that carried choices
    prompt_tokens: int | None = None  # from the usage chunk
    output_tokens: int | None = None
    text: str = ""
    error: str = ""

    @property
    def decode_tokens_per_s(self) -> float | None:
        span = sum(self.itls)
        return len(self.itls) / span if self.itls and span > 0 else None


def time_one(client: openai.OpenAI, model: str, prompt: str, max_tokens: int, t0: float) -> Result:
    """Send one streamed completion and stamp every chunk's arrival."""
    result = Result(start=time.perf_counter() - t0)
    sent = time.perf_counter()
    arrivals = []
    try:
        stream = client.completions.create(model=model, prompt=prompt, max_tokens=max_tokens, temperature=0,
                                           stream=True, stream_options={"include_usage": True})
        for chunk in stream:
            now = time.perf_counter()
            if chunk.choices:
                arrivals.append(now)
                result.text += chunk.choices[0].text or ""
            if chunk.usage:
                result.prompt_tokens = chunk.usage.prompt_tokens
                result.output_tokens = chunk.usage.completion_tokens
        result.latency = time.perf_counter() - sent
    except openai.OpenAIError as e:
        result.error = f"{type(e).__name__}: {e}"
        return result
    result.chunks = len(arrivals)
    if arrivals:
        result.ttft = arrivals[0] - sent
        result.itls = gaps(arrivals)
    return result


def run(client, model: str, prompt: str, max_tokens: int, num_requests: int, concurrency: int,
        request_rate: float, seed: int) -> tuple[list[Result], float]:
    """All requests, at most `concurrency` at once, starting at Poisson arrival
    times when `request_rate` is finite. Returns the results and the duration."""
    rng = np.random.default_rng(seed)
    waits = rng.exponential(1 / request_rate, num_requests) if np.isfinite(request_rate) else np.zeros(num_requests)
    starts = np.cumsum(waits) - waits[0]
    slots = threading.Semaphore(concurrency)
    t0 = time.perf_counter()

    def one(i):
        time.sleep(max(0.0, t0 + starts[i] - time.perf_counter()))
        with slots:
            return time_one(client, model, prompt, max_tokens, t0)

    with ThreadPoolExecutor(max_workers=max(1, min(num_requests, concurrency))) as pool:
        results = list(pool.map(one, range(num_requests)))
    return results, time.perf_counter() - t0


def ms(values) -> list[float]:
    return [v * 1e3 for v in values]


def summary(results: list[Result], duration: float) -> dict:
    """vLLM's benchmark keys (per-request lists in seconds, summaries in ms) plus our own."""
    ok = [r for r in results if not r.error]
    ttfts, latencies = [r.ttft for r in ok if r.ttft is not None], [r.latency for r in ok]
    all_itls = [g for r in ok for g in r.itls]
    out_tokens = sum(r.output_tokens or 0 for r in ok)
    stats = {"duration": duration, "completed": len(ok), "failed": len(results) - len(ok),
             "total_input_tokens": sum(r.prompt_tokens or 0 for r in ok), "total_output_tokens": out_tokens,
             "request_throughput": len(ok) / duration, "output_throughput": out_tokens / duration,
             "per_person_tokens_per_s": [r.output_tokens / r.latency for r in ok if r.output_tokens and r.latency],
             "per_person_decode_tokens_per_s": [r.decode_tokens_per_s for r in ok if r.decode_tokens_per_s]}
    for name, values in (("ttft", ttfts), ("itl", all_itls), ("e2el", latencies)):
        stats[f"mean_{name}_ms"] = statistics.fmean(ms(values)) if values else None
        stats[f"median_{name}_ms"] = percentile(ms(values), 0.5)
        stats[f"p99_{name}_ms"] = percentile(ms(values), 0.99)
    stats["max_itl_ms"] = max(ms(all_itls)) if all_itls else None
    stats.update(start_times=[r.start for r in results], ttfts=[r.ttft for r in results],
                 itls=[r.itls for r in results], latencies=[r.latency for r in results],
                 input_lens=[r.prompt_tokens for r in results], output_lens=[r.output_tokens for r in results],
                 chunks=[r.chunks for r in results], generated_texts=[r.text for r in results],
                 errors=[r.error for r in results])
    return stats


def chunk_warnings(results: list[Result]) -> list[str]:
    """Mistake 2: chunks are not tokens unless the server's count agrees."""
    return [f"request {i}: {r.chunks} chunks but the server counted {r.output_tokens} tokens; "
            f"per-chunk gaps are not per-token gaps here"
            for i, r in enumerate(results) if not r.error and r.output_tokens is not None and r.chunks != r.output_tokens]


def fmt(value, unit="ms") -> str:
    return "-" if value is None else f"{value:.1f} {unit}"


def report(stats: dict, warmups: int) -> str:
    lines = []
    if warmups:
        lines.append(f"({warmups} warm-up request{'s' if warmups > 1 else ''} sent first, not counted)")
    person = stats["per_person_tokens_per_s"]
    decode = stats["per_person_decode_tokens_per_s"]
    lines += [
        f"requests           {stats['completed']} completed, {stats['failed']} failed, in {stats['duration']:.2f} s",
        f"prompt tokens      {stats['total_input_tokens']} in all (usage)",
        f"output tokens      {stats['total_output_tokens']} in all (usage)",
        f"TTFT               median {fmt(stats['median_ttft_ms'])}, p99 {fmt(stats['p99_ttft_ms'])}",
        f"ITL                p50 {fmt(stats['median_itl_ms'])}, p99 {fmt(stats['p99_itl_ms'])}, "
        f"slowest {fmt(stats['max_itl_ms'])}",
        f"end-to-end         median {fmt(stats['median_e2el_ms'])}, p99 {fmt(stats['p99_e2el_ms'])}",
        "",
        f"{'throughput':<18} {'per person (median)':>22} {'whole server':>16}",
        f"{'tokens/s':<18} {fmt(percentile(person, 0.5), 'tok/s'):>22} {fmt(stats['output_throughput'], 'tok/s'):>16}",
        f"{'decode tokens/s':<18} {fmt(percentile(decode, 0.5), 'tok/s'):>22} {'':>16}",
    ]
    return "\n".join(lines)


def write_html(stats: dict, path: str):
    """A Plotly timeline of every request: a TTFT bar, then one segment per gap."""
    import plotly.graph_objects as go  # only this option needs it

    fig = go.Figure()
    rows = [f"request {i}" for i in range(len(stats["ttfts"]))]
    ok = [i for i, t in enumerate(stats["ttfts"]) if t is not None]
    fig.add_bar(orientation="h", y=[rows[i] for i in ok], base=[stats["start_times"][i] * 1e3 for i in ok],
                x=[stats["ttfts"][i] * 1e3 for i in ok], name="TTFT", marker_color="#2f7fd8")
    for shade, parity in (("#d9622b", 0), ("#f0a479", 1)):
        ys, bases, widths = [], [], []
        for i in ok:
            t = (stats["start_times"][i] + stats["ttfts"][i]) * 1e3
            for k, gap in enumerate(stats["itls"][i]):
                if k % 2 == parity:
                    ys.append(rows[i]), bases.append(t), widths.append(gap * 1e3)
                t += gap * 1e3
        fig.add_bar(orientation="h", y=ys, base=bases, x=widths, name="gap" if parity == 0 else "next gap",
                    marker_color=shade, marker_line_width=0)
    fig.update_layout(barmode="overlay", title="Every request: TTFT, then one segment per inter-token gap",
                      xaxis_title="ms since the run began", height=120 + 28 * len(rows))
    fig.write_html(path, include_plotlyjs=True)  # self-contained: opens offline


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m app.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--base-url", default="http://127.0.0.1:8000/v1", help="the server's OpenAI API root")
    p.add_argument("--model", default="tiny", help="model name to ask for (default %(default)s)")
    p.add_argument("--api-key", default="EMPTY")
    prompt = p.add_mutually_exclusive_group()
    prompt.add_argument("--prompt", help="prompt text (default: the seed's question of --prompt-chars characters)")
    prompt.add_argument("--prompt-chars", type=int, default=64,
                        help="length of the seed's question, in characters (= tokens on this factory)")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--num-requests", type=int, default=1)
    p.add_argument("--concurrency", type=int, default=1, help="requests in flight at most")
    p.add_argument("--request-rate", type=float, default=float("inf"),
                   help="requests per second, Poisson arrivals (default: all at once)")
    p.add_argument("--warmups", type=int, default=1, help="requests sent first and not counted")
    p.add_argument("--seed", type=int, default=0, help="seed of the arrival times")
    p.add_argument("--timeout", type=float, default=600, help="seconds per request")
    p.add_argument("--json", metavar="FILE", help="write vLLM's benchmark keys (ttfts, itls, ...) to FILE")
    p.add_argument("--html", metavar="FILE", help="write a Plotly timeline of every request to FILE")
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    if min(args.num_requests, args.concurrency, args.max_tokens, args.prompt_chars) < 1 or args.warmups < 0 \
            or not args.request_rate > 0:
        p.error("--num-requests, --concurrency, --max-tokens and --prompt-chars must be >= 1, --warmups >= 0 "
                "and --request-rate > 0")
    prompt = args.prompt if args.prompt is not None else question(args.prompt_chars)
    client = openai.OpenAI(base_url=args.base_url, api_key=args.api_key, timeout=args.timeout, max_retries=0)
    for _ in range(args.warmups):
        warm = time_one(client, args.model, prompt, args.max_tokens, time.perf_counter())
        if warm.error:
            sys.exit(f"error: the warm-up request failed: {warm.error}")
    results, duration = run(client, args.model, prompt, args.max_tokens, args.num_requests, args.concurrency,
                            args.request_rate, args.seed)
    stats = summary(results, duration)
    stats.update(backend="openai", base_url=args.base_url, model_id=args.model, num_prompts=args.num_requests,
                 request_rate=args.request_rate if np.isfinite(args.request_rate) else "inf",
                 max_concurrency=args.concurrency, warmups=args.warmups)
    print(report(stats, args.warmups))
    for warning in chunk_warnings(results):
        print(f"warning: {warning}", file=sys.stderr)
    for i, r in enumerate(results):
        if r.error:
            print(f"request {i} failed: {r.error}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(stats, f, indent=1)
    if args.html:
        write_html(stats, args.html)
    return 0 if stats["completed"] else 1


if __name__ == "__main__":
    sys.exit(main())
