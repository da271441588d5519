"""The measuring commands as a user runs them (tiny model, so they take a second)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROW_KEYS = {"question_tokens", "chop_ms", "read_ms", "ttft_ms", "gap_p50_ms", "gap_p99_ms", "total_s", "tokens_per_s"}


def run(*args):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_measure_prints_the_seeds_table():
    out = run("engine.measure", "--model", "tiny", "--prompt-tokens", "8", "32", "--new-tokens", "5")
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.strip().splitlines()
    for column in ("question", "chop ms", "read ms", "TTFT ms", "gap p50", "gap p99", "total s", "tokens/s"):
        assert column in header
    assert [r.split()[0] for r in rows] == ["8", "32"]
    assert "warm-up 1 (not counted)" in out.stderr


def test_measure_json_has_the_documented_keys():
    out = run("engine.measure", "--model", "tiny", "--prompt-tokens", "4", "16", "--new-tokens", "6", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["question_tokens"] for r in rows] == [4, 16]
    for r in rows:
        assert ROW_KEYS <= r.keys()
        assert r["ttft_ms"] >= r["read_ms"] > 0
        assert r["gap_p99_ms"] >= r["gap_p50_ms"] > 0
        # total = TTFT + all the gaps, and 6 tokens make 5 gaps
        assert r["total_s"] * 1e3 == pytest.approx(r["ttft_ms"] + 5 * r["decode_ms_per_token"])


def test_measure_rejects_prompts_beyond_the_context():
    out = run("engine.measure", "--model", "tiny", "--prompt-tokens", "500")
    assert out.returncode == 2
    assert "between 1 and 127" in out.stderr


def test_bench_compares_the_engine_with_the_floors():
    out = run("engine.bench", "--model", "tiny", "--sizes", "8", "32", "--repeats", "2", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [(r["kind"], r["tokens"]) for r in rows] == [("decode", 8), ("decode", 32), ("prefill", 8), ("prefill", 32)]
    assert all(r["engine_ms"] > 0 and r["floor_ms"] > 0 and r["ratio"] == r["engine_ms"] / r["floor_ms"] for r in rows)


def test_bench_measures_the_bus_at_each_batch_size():
    out = run("engine.bench", "--model", "tiny", "--concurrency", "1,3", "--repeats", "2", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["batch"] for r in rows] == [1, 3]
    for r in rows:
        assert r["factory_tokens_per_s"] == pytest.approx(r["batch"] * r["person_tokens_per_s"])
        assert r["itl_p99_ms"] >= r["itl_p50_ms"] > 0 and r["floor_ms"] > 0
    bad = run("engine.bench", "--model", "tiny", "--concurrency", "0")
    assert bad.returncode == 2 and "batch sizes >= 1" in bad.stderr


def test_bench_measures_a_long_prompt_arriving_among_typists():
    out = run("engine.bench", "--model", "tiny", "--interference", "8,16", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["step_tokens"] for r in rows] == [8, 16] and rows[0]["prompt_tokens"] == 64  # half the tiny context
    for r in rows:
        assert r["itl_p99_during_ms"] >= r["itl_p50_during_ms"] > 0 and r["itl_p50_before_ms"] > 0
        assert r["ttft_ratio"] == pytest.approx(r["ttft_ms"] / r["idle_ttft_ms"])
        assert r["itl_ratio"] == pytest.approx(r["itl_p99_during_ms"] / r["itl_p50_before_ms"])
