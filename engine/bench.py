"""`python -m engine.bench`: the engine's speed against this machine's own floors.

With `--concurrency 1,2,4,8` it measures the bus instead: B requests typing
together, one batched decode step for all of them, against the floor of a
B-row block through every weight matrix.

The floors are measured in the same process, on the model's own weights,
interleaved with the engine's runs so both see the same machine:

- decode floor: one float32 vector through every weight matrix (reading all
  weights once), the least any decode step can cost;
- prefill floor: a T-token block through every weight matrix, the matrix
  multiply work a T-token prefill cannot avoid.

Both floors include the LM head for one row, as the engine does. Reported
figures are medians over repeats; the ratio engine / floor is the result.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np

from .config import DEFAULT_PRESET, PRESETS, preset
from .events import Done, Failed
from .kv_cache import KVCache
from .model import Model, Scratch, linear
from .questions import question
from .scheduler import Limits, Scheduler
from .sequence import Sequence, step
from .stopwatch import percentile

TARGETS = {("decode", 256): 1.2, ("decode", 1024): 1.4, ("prefill", 256): 1.3, ("prefill", 1024): 1.75}


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def weight_pass(model: Model, rows: int):
    """A function running `rows` random rows through every weight matrix once,
    multiplied as the engine multiplies them (`linear`), and nothing else."""
    rng = np.random.default_rng(0)
    c = model.config
    x_embd = rng.standard_normal((rows, c.n_embd), dtype=np.float32)
    x_mlp = rng.standard_normal((rows, c.n_mlp), dtype=np.float32)
    out_qkv, out_embd, out_mlp = (np.empty((rows, n), dtype=np.float32) for n in (3 * c.n_embd, c.n_embd, c.n_mlp))
    head_in = x_embd[-1]  # the LM head sees only the sampled position
    lm_head, scratch = model.wte.T, Scratch()

    def run():
        for b in model.blocks:
            linear(x_embd, b.w_qkv, out_qkv, scratch)
            linear(x_embd, b.w_o, out_embd, scratch)
            linear(x_embd, b.w_fc, out_mlp, scratch)
            linear(x_mlp, b.w_proj, out_embd, scratch)
        head_in @ lm_head

    return run


def decode_step(model: Model, context: int, repeats: int):
    """A function running one decode step at `context` tokens held; the cache
    is reserved up front so the timing is the steady-state step."""
    cache = KVCache(model.config)
    cache.reserve(context + repeats + 1)
    model.forward(np.random.default_rng(1).integers(0, 256, context), cache)
    return lambda: model.forward([65], cache)


def prefill(model: Model, tokens: int):
    ids = np.random.default_rng(2).integers(0, 256, tokens)

    def run():
        cache = KVCache(model.config)
        model.forward(ids, cache)
        cache.free()

    return run


def run_bench(model: Model, sizes, repeats: int, kinds=("decode", "prefill"), out=sys.stderr) -> list[dict]:
    rows = []
    for kind in kinds:
        for n in sizes:
            if kind == "decode":
                engine_fn, floor_fn = decode_step(model, n, repeats), weight_pass(model, 1)
            else:
                engine_fn, floor_fn = prefill(model, n), weight_pass(model, n)
            engine_fn(), floor_fn()  # warm-up, not counted
            engine_t, floor_t = [], []
            for _ in range(repeats):  # interleaved, so noise hits both alike
                engine_t.append(timed(engine_fn))
                floor_t.append(timed(floor_fn))
            e, f = statistics.median(engine_t) * 1e3, statistics.median(floor_t) * 1e3
            row = {"kind": kind, "tokens": n, "engine_ms": e, "floor_ms": f, "ratio": e / f,
                   "target_ratio": TARGETS.get((kind, n))}
            rows.append(row)
            print(f"  {kind} {n}: {e:.1f} ms vs floor {f:.1f} ms", file=out, flush=True)
    return rows


def batched_decode(model: Model, batch: int, steps: int):
    """A function running one decode step for `batch` sequences typing together
    (each holding a 64-token question), as the scheduler runs them."""
    seqs = [Sequence(model.config, question(64), steps + 8) for _ in range(batch)]
    for seq in seqs:  # read the prompts first, untimed
        for _ in step(model, [(seq, seq.next_tokens(64))]):
            pass

    def run():
        for _ in step(model, [(seq, seq.next_tokens(1)) for seq in seqs]):
            pass

    return run


def run_concurrency(model: Model, batches, repeats: int, out=sys.stderr) -> list[dict]:
    rows = []
    for batch in batches:
        engine_fn, floor_fn = batched_decode(model, batch, repeats + 1), weight_pass(model, batch)
        engine_fn(), floor_fn()  # warm-up, not counted
        engine_t, floor_t = [], []
        for _ in range(repeats):
            engine_t.append(timed(engine_fn))
            floor_t.append(timed(floor_fn))
        step_ms, floor_ms = percentile(engine_t, 0.5) * 1e3, statistics.median(floor_t) * 1e3
        rows.append({"batch": batch, "itl_p50_ms": step_ms, "itl_p99_ms": percentile(engine_t, 0.99) * 1e3,
                     "person_tokens_per_s": 1e3 / step_ms, "factory_tokens_per_s": batch * 1e3 / step_ms,
                     "floor_ms": floor_ms, "ratio": step_ms / floor_ms})
        print(f"  batch {batch}: step {step_ms:.1f} ms vs floor {floor_ms:.1f} ms", file=out, flush=True)
    return rows


def interference(model: Model, step_tokens: int, streams: int = 4) -> dict:
    """A long prompt (1,024 tokens, or half the context of a smaller model)
    arriving while `streams` requests type, through the real scheduler with
    `step_tokens` rows per step: the streams' gaps before it came and while
    it was read (from its arrival to its first token), and its TTFT against
    the same prompt on an idle factory."""
    n_ctx = model.config.n_ctx
    prompt_tokens = min(1024, n_ctx // 2)
    engine = Scheduler(model, Limits(step_tokens=step_tokens))
    try:
        alone = engine.submit(question(prompt_tokens), 1)
        wait_done(alone)
        idle_ttft = alone.token_times[0] - alone.arrived
        stream_prompt = min(64, n_ctx // 8)  # long enough answers to outlast the measurement, within the KV budget
        typing = [engine.submit(question(stream_prompt), min(600, n_ctx - stream_prompt)) for _ in range(streams)]
        wait_until(lambda: min(len(r.token_times) for r in typing) >= 60)
        long = engine.submit(question(prompt_tokens), 1)
        wait_done(long)
        first = long.token_times[0]
        ends_before = min(len(r.token_times) for r in typing)
        wait_until(lambda: min(len(r.token_times) for r in typing) >= ends_before + 10)
        for r in typing:
            r.cancel()
        before, during = [], []
        for r in typing:
            times = r.token_times
            for a, b in zip(times[10:], times[11:]):  # the first few steps share the bus with the others' prompts
                if b <= long.arrived:
                    before.append(b - a)
                elif b <= first:
                    during.append(b - a)
    finally:
        engine.close(timeout=10)
    p50 = percentile(before, 0.5)
    return {"step_tokens": step_tokens, "prompt_tokens": prompt_tokens, "itl_p50_before_ms": p50 * 1e3,
            "itl_p50_during_ms": percentile(during, 0.5) * 1e3, "itl_p99_during_ms": percentile(during, 0.99) * 1e3,
            "itl_ratio": percentile(during, 0.99) / p50, "ttft_ms": (first - long.arrived) * 1e3,
            "idle_ttft_ms": idle_ttft * 1e3, "ttft_ratio": (first - long.arrived) / idle_ttft}


def wait_done(request):
    wait_until(lambda: any(isinstance(e, (Done, Failed)) for e in drain_now(request)))


def wait_until(condition, seconds: float = 300):
    """Poll `condition`; a benchmark that cannot finish says so instead of hanging."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the interference benchmark made no progress for {seconds:.0f} s")
        time.sleep(0.005)


def drain_now(request) -> list:
    events = []
    while not request.events.empty():
        events.append(request.events.get_nowait())
    return events


def format_interference(rows) -> str:
    lines = [f"A {rows[0]['prompt_tokens']}-token prompt arriving while 4 streams type (targets: their ITL p99 "
             "while it is read <= 2x their p50 before it came; its TTFT <= 2.5x on an idle factory)",
             f"{'step tokens':>11} {'p50 before':>10} {'p50 during':>10} {'p99 during':>10} {'p99/p50':>8} "
             f"{'TTFT ms':>8} {'idle ms':>8} {'TTFT/idle':>9}"]
    for r in rows:
        lines.append(f"{r['step_tokens']:>11} {r['itl_p50_before_ms']:>10.1f} {r['itl_p50_during_ms']:>10.1f} "
                     f"{r['itl_p99_during_ms']:>10.1f} {r['itl_ratio']:>8.2f} {r['ttft_ms']:>8.0f} "
                     f"{r['idle_ttft_ms']:>8.0f} {r['ttft_ratio']:>9.2f}")
    return "\n".join(lines)


def format_concurrency(rows) -> str:
    lines = [f"{'batch':>6} {'ITL p50':>8} {'ITL p99':>8} {'tok/s each':>11} {'tok/s factory':>14} "
             f"{'floor ms':>9} {'ratio':>6}"]
    for r in rows:
        lines.append(f"{r['batch']:>6} {r['itl_p50_ms']:>8.1f} {r['itl_p99_ms']:>8.1f} {r['person_tokens_per_s']:>11.1f} "
                     f"{r['factory_tokens_per_s']:>14.1f} {r['floor_ms']:>9.1f} {r['ratio']:>6.2f}")
    return "\n".join(lines)


def format_table(rows) -> str:
    lines = [f"{'what':>8} {'tokens':>7} {'engine ms':>10} {'floor ms':>9} {'ratio':>6} {'target':>7}"]
    for r in rows:
        target = f"<={r['target_ratio']:.2f}" if r["target_ratio"] else ""
        lines.append(f"{r['kind']:>8} {r['tokens']:>7} {r['engine_ms']:>10.1f} {r['floor_ms']:>9.1f} "
                     f"{r['ratio']:>6.2f} {target:>7}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m engine.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=DEFAULT_PRESET, choices=sorted(PRESETS))
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024],
                   help="decode context lengths and prefill prompt lengths (tokens)")
    p.add_argument("--repeats", type=int, default=7, help="timed repeats per case (median reported)")
    p.add_argument("--only", choices=["decode", "prefill"], help="run one kind of case")
    p.add_argument("--concurrency", type=lambda v: [int(b) for b in v.split(",")], metavar="B,B,...",
                   help="measure batched decode at these batch sizes instead (e.g. 1,2,4,8,16,32)")
    p.add_argument("--interference", type=lambda v: [int(b) for b in v.split(",")], metavar="T,T,...",
                   help="instead: a 1,024-token prompt arriving while 4 streams type, with these step token "
                        "budgets (WF_STEP_TOKENS), e.g. 16,24,32")
    p.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    args = p.parse_args(argv)
    config = preset(args.model)
    if not (args.concurrency or args.interference) and (max(args.sizes) >= config.n_ctx or min(args.sizes) < 1):
        p.error(f"sizes must be between 1 and {config.n_ctx - 1} for {args.model}")
    if args.concurrency and min(args.concurrency) < 1:
        p.error("--concurrency takes batch sizes >= 1")
    if args.interference and min(args.interference) < 2:
        p.error("--interference takes step token budgets >= 2 (4 streams' tokens and a piece of the prompt)")
    print(f"building {args.model} ({config.n_params / 1e6:.0f}M parameters)...", file=sys.stderr, flush=True)
    model = Model(config)
    if args.interference:
        rows = [interference(model, t) for t in args.interference]
        print(json.dumps(rows, indent=1) if args.json else format_interference(rows))
        return
    if args.concurrency:
        rows = run_concurrency(model, args.concurrency, args.repeats)
        print(json.dumps(rows, indent=1) if args.json else format_concurrency(rows))
        return
    kinds = [args.only] if args.only else ["decode", "prefill"]
    rows = run_bench(model, args.sizes, args.repeats, kinds)
    print(json.dumps(rows, indent=1) if args.json else format_table(rows))


if __name__ == "__main__":
    main()
