"""The front desk: one engine thread, a fair line, cancellation, and failures kept apart."""


from pathlib import Path

import numpy as np
import pytest

from engine.events import Done, Failed, Queued, Token
from engine.generate import complete
from engine.scheduler import EngineStopped, Limits, QueueFull, Scheduler

from .conftest import drain, slow_down, wait_for


@pytest.fixture
def desk(gated_model):
    """One seat on the bus, three places in line: the line's behaviour in isolation."""
    scheduler = Scheduler(gated_model, Limits(max_running=1, max_waiting=3))
    yield scheduler
    gated_model.gate.set()
    scheduler.close(timeout=10)


def started(desk, request):
    """Wait until the engine has taken `request` out of the line."""
    wait_for(lambda: request.started is not None, "the engine never took the request")
    return request


def positions(events):
    return [e.position for e in events if isinstance(e, Queued)]


def test_requests_are_served_in_order_and_hear_their_place(desk, gated_model):
    first = started(desk, desk.submit("first", 3))
    second = desk.submit("second", 3)
    third = desk.submit("third", 3)
    gated_model.gate.set()
    runs = [drain(r) for r in (first, second, third)]
    assert all(isinstance(events[-1], Done) and events[-1].finish_reason == "length" for events in runs)
    assert positions(runs[2])[-2:] == [2, 1]  # counted down as the line moved
    first_token = [r.arrived + events[-1].stats.ttft_s for r, events in zip((first, second, third), runs)]
    # served one after another: each typed its first token after the one before had finished
    assert runs[0][-1].t <= first_token[1] and runs[1][-1].t <= first_token[2]
    # and the wait in line counts toward TTFT
    assert runs[2][-1].stats.ttft_s >= runs[1][-1].t - third.arrived


def test_cancelling_a_waiting_request_takes_it_out_of_line(desk, gated_model):
    running = started(desk, desk.submit("running", 3))
    leaving = desk.submit("leaving", 3)
    staying = desk.submit("staying", 3)
    leaving.cancel()
    assert desk.waiting == 1
    gated_model.gate.set()
    left = drain(leaving)
    assert isinstance(left[-1], Done) and left[-1].finish_reason == "cancelled" and left[-1].stats is None
    assert not any(isinstance(e, Token) for e in left)
    assert positions(drain(staying))[-1] == 1
    assert drain(running)[-1].finish_reason == "length"


def test_cancelling_the_running_request_stops_it_and_frees_its_cache(desk, gated_model, caches):
    running = started(desk, desk.submit("stop me", 50))
    running.cancel()
    gated_model.gate.set()
    events = drain(running)
    assert events[-1] == Done(events[-1].t, "cancelled", None)
    assert not any(isinstance(e, Token) for e in events)
    assert caches and all(c.bytes_reserved == 0 for c in caches)
    assert drain(desk.submit("next", 2))[-1].finish_reason == "length"


def test_a_full_line_says_so_before_queueing(desk):
    started(desk, desk.submit("running", 2))
    for _ in range(3):
        desk.submit("waiting", 2)
    with pytest.raises(QueueFull, match="3 requests are already waiting"):
        desk.submit("one too many", 2)
    assert desk.waiting == 3


def test_bad_requests_are_refused_at_the_door(desk):
    with pytest.raises(ValueError, match="prompt is empty"):
        desk.submit("", 5)
    with pytest.raises(ValueError, match="context holds 128"):
        desk.submit("x" * 500, 5)
    assert desk.waiting == 0 and desk.running == 0


def test_one_failing_request_does_not_stop_the_factory(desk, gated_model, monkeypatch, caches):
    original = type(gated_model).forward_steps

    def explode_on_sabotage(self, segments, all_logits=False):
        if any(bytes(ids[:8]) == b"sabotage" for ids, _ in segments):
            raise RuntimeError("simulated fault")
        return (yield from original(self, segments, all_logits))

    monkeypatch.setattr(type(gated_model), "forward_steps", explode_on_sabotage)
    gated_model.gate.set()
    failed = drain(desk.submit("sabotage", 5))
    assert isinstance(failed[-1], Failed) and "simulated fault" in failed[-1].message
    assert drain(desk.submit("fine", 3))[-1].finish_reason == "length"
    assert desk.alive and all(c.bytes_reserved == 0 for c in caches)


def test_a_closed_desk_refuses_work(gated_model):
    scheduler = Scheduler(gated_model, Limits(max_running=1))
    waiting_behind = [started(scheduler, scheduler.submit("held", 3)), scheduler.submit("waiting", 3)]
    gated_model.gate.set()
    scheduler.close(timeout=10)
    assert not scheduler.alive
    assert all(isinstance(drain(r)[-1], Done) for r in waiting_behind)
    with pytest.raises(EngineStopped):
        scheduler.submit("too late", 3)


def tokens_of(events):
    return [e.id for e in events if isinstance(e, Token)]


def test_requests_ride_the_bus_together_and_type_what_they_would_alone(gated_model):
    prompts = ["Why is the sky blue?", "é", "a much longer question than the others, to read in chunks", "hi"]
    scheduler = Scheduler(gated_model, Limits(max_running=4, step_tokens=16))
    try:
        requests = [scheduler.submit(p, 12) for p in prompts]
        wait_for(lambda: scheduler.running == 4, "not all four were admitted")
        assert scheduler.waiting == 0
        gated_model.gate.set()
        runs = [drain(r) for r in requests]
    finally:
        scheduler.close(timeout=10)
    for prompt, events in zip(prompts, runs):
        assert tokens_of(events) == complete(gated_model, prompt, 12).token_ids
        assert events[-1].finish_reason == "length"
    floors = [[e.floor for e in events if isinstance(e, Token)] for events in runs]
    assert max(f.batch for fs in floors for f in fs) == 4  # steps shared by all four
    seats = [fs[0].seat for fs in floors]
    assert sorted(seats) == [1, 2, 3, 4] and all(f.seat == fs[0].seat for fs in floors for f in fs)
    assert all(f.seat in f.seats and len(f.seats) == f.batch for fs in floors for f in fs)
    assert all([f.factory_tokens for f in fs] == sorted({f.factory_tokens for f in fs}) for fs in floors)
    assert max(f.factory_tokens for fs in floors for f in fs) == 4 * 12  # every token the factory typed
    assert all(f.factory_kv_bytes >= 0 for fs in floors for f in fs)


def test_the_kv_budget_holds_requests_in_line(gated_model, tiny_config):
    per_request = (5 + 20) * tiny_config.kv_bytes_per_token  # "hello" and 20 new tokens, at most
    scheduler = Scheduler(gated_model, Limits(max_running=8, kv_budget_bytes=2 * per_request))
    try:
        requests = [scheduler.submit("hello", 20) for _ in range(4)]
        wait_for(lambda: scheduler.running == 2, "the first two were not admitted")
        assert (scheduler.running, scheduler.waiting) == (2, 2)  # budget, not seats, is the limit
        with pytest.raises(ValueError, match="more than the factory's budget"):
            scheduler.submit("hello", 100)
        gated_model.gate.set()
        assert all(drain(r)[-1].finish_reason == "length" for r in requests)
        assert {r.seat for r in requests} == {1, 2}  # two seats under this budget, freed and taken again
    finally:
        scheduler.close(timeout=10)


def test_a_long_prompt_is_read_in_chunks_while_others_keep_typing(tiny_model, monkeypatch):
    slow_down(monkeypatch, tiny_model, seconds=0.002)  # so the typing outlasts the reading
    scheduler = Scheduler(tiny_model, Limits(max_running=4, step_tokens=8))
    try:
        typing = scheduler.submit("go", 100)
        first = typing.events.get(timeout=10)
        while not isinstance(first, Token):
            first = typing.events.get(timeout=10)
        reading = scheduler.submit("x" * 100, 3)
        read_events = drain(reading)
        typed = drain(typing)
    finally:
        scheduler.close(timeout=10)
    tokenized = next(e.t for e in read_events if type(e).__name__ == "Tokenized")
    prefilled = next(e.t for e in read_events if type(e).__name__ == "Prefilled")
    typed_meanwhile = [e for e in typed if isinstance(e, Token) and tokenized < e.t < prefilled]
    assert len(typed_meanwhile) >= 100 // 8 - 1  # a token per step while the prompt went in 7-token chunks
    progress = [e.fraction for e in read_events if type(e).__name__ == "PrefillProgress"]
    assert progress == sorted(progress) and progress[-1] == 1.0


def test_a_reader_who_stops_reading_is_dropped(tiny_model, caches):
    scheduler = Scheduler(tiny_model, Limits(event_buffer=10))
    try:
        silent = scheduler.submit("nobody reads this", 100)
        wait_for(lambda: not (scheduler.running or scheduler.waiting), "the engine is still serving a silent reader")
        events = drain(silent)
        assert len(events) == 1 and isinstance(events[0], Failed) and "went unread" in events[0].message
        assert all(c.bytes_reserved == 0 for c in caches)
        assert drain(scheduler.submit("next", 3))[-1].finish_reason == "length"
    finally:
        scheduler.close(timeout=10)


def test_a_request_past_its_time_limit_is_stopped(tiny_model, caches, monkeypatch):
    slow_down(monkeypatch, tiny_model, seconds=0.01)
    scheduler = Scheduler(tiny_model, Limits(max_running=1, timeout_s=0.2))
    try:
        slow = scheduler.submit("this takes a while", 100)
        behind = scheduler.submit("and this waits", 100)
        for request in (slow, behind):
            last = drain(request)[-1]
            assert isinstance(last, Failed) and "longer than 0.2 s" in last.message
        assert scheduler.running == 0 and scheduler.waiting == 0
        assert all(c.bytes_reserved == 0 for c in caches)
    finally:
        scheduler.close(timeout=10)


def test_freed_memory_goes_back_when_the_factory_falls_idle(tiny_model, monkeypatch):
    """glibc keeps freed caches in its heap; the engine hands them back once
    nobody is running or waiting (engine/memory.py), never mid-crowd."""
    import engine.scheduler as scheduler_module

    trims = []
    engine = Scheduler(tiny_model)
    monkeypatch.setattr(scheduler_module, "release_free_memory",
                        lambda: trims.append((engine.running, engine.waiting)))
    try:
        requests = [engine.submit("a crowd", 20) for _ in range(3)]
        for request in requests:
            drain(request)
        wait_for(lambda: trims, "no trim after the crowd left")
        assert set(trims) == {(0, 0)}
    finally:
        engine.close(timeout=5)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RSS from Linux's /proc")
def test_releasing_memory_shrinks_the_process_after_a_crowd_of_small_buffers():
    from engine.memory import release_free_memory

    def rss_mb():
        line = next(ln for ln in Path("/proc/self/status").read_text().splitlines() if ln.startswith("VmRSS"))
        return int(line.split()[1]) / 1024

    buffers = [np.ones(100_000 // 4, np.float32) for _ in range(2000)]  # 200 MB in blocks from malloc's heap
    survivors = buffers[1::2]  # every other one stays: the freed half is holes glibc keeps, not a heap top
    del buffers
    held = rss_mb()
    release_free_memory()
    assert rss_mb() < held - 70  # most of the freed 100 MB goes back
    assert len(survivors) == 1000
