"""The stopwatches, as plain functions over `perf_counter` timestamps (seconds).

Definitions follow SPEC.md: TTFT runs from the moment the request arrived
(so waiting in line counts) to the first token; ITL is the list of gaps
between consecutive tokens, reported as p50 and p99 where p99 is the gap at
index int(0.99 * (n - 1)) of the sorted gaps; total runs from arrival to the
last token.
"""

from dataclasses import dataclass


def ttft(arrived: float, token_times: list[float]) -> float:
    return token_times[0] - arrived


def gaps(token_times: list[float]) -> list[float]:
    """Inter-token latencies: n tokens give n - 1 gaps."""
    return [b - a for a, b in zip(token_times, token_times[1:])]


def percentile(values: list[float], q: float) -> float | None:
    """The value at index int(q * (n - 1)) of the sorted values; None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


def decode_tokens_per_s(token_times: list[float]) -> float | None:
    """Typing speed once the first token is out: (n - 1) / (last - first)."""
    span = token_times[-1] - token_times[0]
    return (len(token_times) - 1) / span if len(token_times) > 1 and span > 0 else None


@dataclass(frozen=True)
class Stats:
    """One request's figures, in seconds unless named otherwise."""

    prompt_tokens: int
    output_tokens: int
    chop_s: float  # tokenize
    prefill_s: float  # read: the whole prompt through the model
    ttft_s: float  # arrival -> first token, queueing included
    itl_p50_s: float | None  # None with a single token: no gap to measure
    itl_p99_s: float | None
    itl_max_s: float | None
    total_s: float  # arrival -> last token
    tokens_per_s: float  # this person's answer: output tokens / total
    decode_tokens_per_s: float | None  # (n - 1) / (last - first), the seed's "tokens/s"
    prefill_ms_per_token: float
    decode_ms_per_token: float | None  # mean gap

    @property
    def predicted_total_s(self) -> float:
        """The check total ~ TTFT + (n - 1) x ITL, with the median gap."""
        return self.ttft_s + (self.output_tokens - 1) * (self.itl_p50_s or 0.0)

    def table_row(self) -> dict:
        """The seed's table as a row (times in ms, total in s), plus the
        per-token costs; `tokens_per_s` is the seed's, (n - 1) / (last - first)."""
        return {
            "question_tokens": self.prompt_tokens,
            "chop_ms": self.chop_s * 1e3,
            "read_ms": self.prefill_s * 1e3,
            "ttft_ms": self.ttft_s * 1e3,
            "gap_p50_ms": ms(self.itl_p50_s),
            "gap_p99_ms": ms(self.itl_p99_s),
            "total_s": self.total_s,
            "tokens_per_s": self.decode_tokens_per_s,
            "prefill_ms_per_token": self.prefill_ms_per_token,
            "decode_ms_per_token": self.decode_ms_per_token,
            "decode_vs_prefill": (self.decode_ms_per_token / self.prefill_ms_per_token
                                  if self.decode_ms_per_token is not None else None),
        }


def ms(seconds: float | None) -> float | None:
    """Seconds as milliseconds; None stays None (a figure one token cannot have)."""
    return None if seconds is None else seconds * 1e3


def summarize(arrived: float, chop_start: float, tokenized: float, prefilled: float,
              token_times: list[float], prompt_tokens: int) -> Stats:
    """All of one request's stopwatches from its timestamps."""
    assert token_times, "a finished request has at least one token"
    g = gaps(token_times)
    n = len(token_times)
    total = token_times[-1] - arrived
    prefill = prefilled - tokenized
    return Stats(
        prompt_tokens=prompt_tokens,
        output_tokens=n,
        chop_s=tokenized - chop_start,
        prefill_s=prefill,
        ttft_s=ttft(arrived, token_times),
        itl_p50_s=percentile(g, 0.50),
        itl_p99_s=percentile(g, 0.99),
        itl_max_s=max(g) if g else None,
        total_s=total,
        tokens_per_s=n / total,
        decode_tokens_per_s=decode_tokens_per_s(token_times),
        prefill_ms_per_token=prefill * 1e3 / prompt_tokens,
        decode_ms_per_token=sum(g) * 1e3 / len(g) if g else None,
    )
