"""The stopwatches over known timestamps."""

import pytest

from engine import stopwatch


def test_ttft_gaps_and_totals():
    arrived = 10.0
    times = [10.5, 10.6, 10.8, 10.9]  # first token 0.5 s after arrival
    stats = stopwatch.summarize(arrived, 10.01, 10.02, 10.49, times, prompt_tokens=47)
    assert stats.ttft_s == pytest.approx(0.5)
    assert stopwatch.gaps(times) == pytest.approx([0.1, 0.2, 0.1])
    assert stats.itl_p50_s == pytest.approx(0.1)
    assert stats.itl_max_s == pytest.approx(0.2)
    assert stats.total_s == pytest.approx(0.9)
    assert stats.chop_s == pytest.approx(0.01)
    assert stats.prefill_s == pytest.approx(0.47)
    assert stats.prefill_ms_per_token == pytest.approx(10.0)
    assert stats.decode_ms_per_token == pytest.approx(400 / 3)
    assert stats.tokens_per_s == pytest.approx(4 / 0.9)
    assert stats.decode_tokens_per_s == pytest.approx(3 / 0.4)
    # the check: total ~ TTFT + (n - 1) x ITL(p50)
    assert stats.predicted_total_s == pytest.approx(0.5 + 3 * 0.1)


def test_p99_is_the_gap_at_index_int_099_n_minus_1():
    gaps = [float(i) for i in range(200)]  # sorted 0..199
    assert stopwatch.percentile(gaps, 0.99) == 197.0  # int(0.99 * 199) = 197
    assert stopwatch.percentile(list(reversed(gaps)), 0.50) == 99.0
    assert stopwatch.percentile([3.0], 0.99) == 3.0
    assert stopwatch.percentile([], 0.99) is None


def test_a_single_token_has_no_gaps():
    stats = stopwatch.summarize(0.0, 0.0, 0.001, 0.2, [0.25], prompt_tokens=4)
    assert stats.itl_p50_s is None and stats.itl_p99_s is None and stats.itl_max_s is None
    assert stats.decode_tokens_per_s is None and stats.decode_ms_per_token is None
    assert stats.total_s == stats.ttft_s == 0.25
    assert stats.predicted_total_s == 0.25
