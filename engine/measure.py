"""`python -m engine.measure`: the seed's experiment, from one command.

Runs one question per prompt size (64, 256 and 1,024 tokens by default) with
64 new tokens each, after one warm-up run that is printed but not counted,
and prints the seed's table plus the per-token cost of reading (prefill)
against typing (decode) -- the "bus" lesson: a decode step hauls all the
weights for one token, a prefill step hauls them once for the whole prompt.
"""

import argparse
import json
import resource
import sys

from .config import DEFAULT_PRESET, PRESETS, preset
from .generate import complete
from .model import Model
from .questions import SEED_SIZES, question

COLUMNS = ("question", "chop ms", "read ms", "TTFT ms", "gap p50", "gap p99", "total s", "tokens/s",
           "read ms/tok", "type ms/tok", "type/read")


def format_table(rows: list[dict]) -> str:
    def cell(v, spec):
        return "-" if v is None else format(v, spec)

    lines = [" ".join(f"{c:>9}" for c in COLUMNS)]
    for r in rows:
        lines.append(" ".join(cell(v, f">9{spec}") for v, spec in (
            (r["question_tokens"], "d"), (r["chop_ms"], ".2f"), (r["read_ms"], ".1f"), (r["ttft_ms"], ".1f"),
            (r["gap_p50_ms"], ".1f"), (r["gap_p99_ms"], ".1f"), (r["total_s"], ".2f"), (r["tokens_per_s"], ".1f"),
            (r["prefill_ms_per_token"], ".2f"), (r["decode_ms_per_token"], ".1f"), (r["decode_vs_prefill"], ".0f"),
        )))
    return "\n".join(lines)


def run_experiment(model: Model, sizes, new_tokens: int, warmup: int = 1, log=sys.stderr) -> list[dict]:
    """The seed's experiment on `model`; progress goes to `log`."""
    for i in range(warmup):
        stats = complete(model, question(sizes[0]), new_tokens).stats
        print(f"warm-up {i + 1} (not counted): {sizes[0]} tokens, TTFT {stats.ttft_s * 1e3:.1f} ms",
              file=log, flush=True)
    rows = []
    for n in sizes:
        rows.append(complete(model, question(n), new_tokens).stats.table_row())
        print(f"question of {n} tokens: done", file=log, flush=True)
    return rows


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def parser(prog: str = "python -m engine.measure") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=DEFAULT_PRESET, choices=sorted(PRESETS), help="model preset")
    p.add_argument("--prompt-tokens", type=int, nargs="+", default=list(SEED_SIZES), metavar="N",
                   help="question sizes in tokens (default: 64 256 1024)")
    p.add_argument("--new-tokens", type=int, default=64, help="tokens to generate per question")
    p.add_argument("--warmup", type=int, default=1, help="warm-up runs, not counted")
    p.add_argument("--json", action="store_true", help="print the rows as a JSON list instead of a table")
    return p


def main(argv=None, prog: str = "python -m engine.measure"):
    p = parser(prog)
    args = p.parse_args(argv)
    config = preset(args.model)
    if min(args.prompt_tokens) < 1 or max(args.prompt_tokens) >= config.n_ctx:
        p.error(f"--prompt-tokens must be between 1 and {config.n_ctx - 1} for {args.model}")
    if args.new_tokens < 1 or args.warmup < 0:
        p.error("--new-tokens must be >= 1 and --warmup >= 0")
    print(f"building {args.model}: {config.n_params / 1e6:.0f}M parameters, seed {config.seed}...",
          file=sys.stderr, flush=True)
    model = Model(config)
    rows = run_experiment(model, args.prompt_tokens, args.new_tokens, args.warmup)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(format_table(rows))
        print(f"peak memory {peak_rss_mb():.0f} MB (weights {model.weight_bytes / 1e6:.0f} MB)", file=sys.stderr)


if __name__ == "__main__":
    main()
