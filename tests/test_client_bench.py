"""The client stopwatch (`python -m app.bench`) against the real server."""

import json

import pytest

from app import bench

from .test_api import metric


def test_one_request_matches_the_servers_own_count_and_clock(live_server, tmp_path, capsys):
    ttft_sum = metric(live_server, 'vllm:time_to_first_token_seconds_sum{model_name="tiny"}')
    e2e_sum = metric(live_server, 'vllm:e2e_request_latency_seconds_sum{model_name="tiny"}')
    out = tmp_path / "run.json"
    code = bench.main(["--base-url", live_server.http + "/v1", "--max-tokens", "20", "--warmups", "0",
                       "--json", str(out)])
    assert code == 0
    stats = json.loads(out.read_text())
    assert stats["output_lens"] == [20] and stats["chunks"] == [20] and stats["input_lens"] == [64]
    assert len(stats["itls"][0]) == 19 and stats["errors"] == [""]
    # The client's stopwatch starts before the server's and stops after it.
    server_ttft = metric(live_server, 'vllm:time_to_first_token_seconds_sum{model_name="tiny"}') - ttft_sum
    server_e2e = metric(live_server, 'vllm:e2e_request_latency_seconds_sum{model_name="tiny"}') - e2e_sum
    assert stats["ttfts"][0] >= server_ttft > 0
    assert stats["latencies"][0] >= server_e2e >= server_ttft
    printed = capsys.readouterr().out
    for label in ("prompt tokens", "output tokens", "TTFT", "ITL", "end-to-end", "decode tokens/s"):
        assert label in printed


def test_many_requests_with_warmups_and_poisson_arrivals(live_server, tmp_path, capsys):
    out, html = tmp_path / "many.json", tmp_path / "many.html"
    code = bench.main(["--base-url", live_server.http + "/v1", "--max-tokens", "8", "--num-requests", "5",
                       "--concurrency", "2", "--request-rate", "50", "--json", str(out), "--html", str(html)])
    assert code == 0
    stats = json.loads(out.read_text())
    assert stats["completed"] == 5 and stats["warmups"] == 1  # the warm-up is not among the five
    assert stats["output_lens"] == [8] * 5
    assert len(stats["start_times"]) == 5 and all(0 <= t <= stats["duration"] for t in stats["start_times"])
    assert stats["output_throughput"] == pytest.approx(40 / stats["duration"])
    printed = capsys.readouterr().out
    assert "1 warm-up request sent first, not counted" in printed
    assert "per person" in printed and "whole server" in printed
    page = html.read_text()
    assert "TTFT" in page and "plotly" in page.lower()


def test_chunks_that_are_not_tokens_are_flagged():
    agree = bench.Result(chunks=8, output_tokens=8)
    packed = bench.Result(chunks=3, output_tokens=8)  # a server that sends several tokens per chunk
    warnings = bench.chunk_warnings([agree, packed])
    assert len(warnings) == 1 and "request 1: 3 chunks but the server counted 8 tokens" in warnings[0]


def test_an_unreachable_server_is_a_clear_error(capsys):
    with pytest.raises(SystemExit) as caught:
        bench.main(["--base-url", "http://127.0.0.1:9/v1", "--timeout", "5"])
    assert "warm-up request failed" in str(caught.value) and "Connection" in str(caught.value)


def test_bad_flags_are_refused(capsys):
    with pytest.raises(SystemExit) as caught:
        bench.main(["--concurrency", "0"])
    assert caught.value.code == 2 and "--concurrency" in capsys.readouterr().err
