"""The store of recorded runs (SQLite): whole runs in, whole runs out, the
oldest pruned, the owner's key required to add client times, and many
threads at once."""

import sqlite3
import threading

import pytest

from app.runs import RunStore, new_id, valid_id

MESSAGES = [{"type": "queued", "t_ms": 0.1, "position": 1},
            {"type": "token", "t_ms": 5.0, "index": 0, "id": 72, "text": "H", "kv_bytes": 1024},
            {"type": "done", "t_ms": 5.5, "finish_reason": "length", "stats": {"output_tokens": 1}}]


@pytest.fixture
def store(tmp_path):
    return RunStore(str(tmp_path / "runs.sqlite3"), max_runs=100, max_bytes=1 << 20)


def save(store, prompt="Why?", messages=MESSAGES, key="k"):
    run_id = new_id()
    store.save("tiny", prompt, {"max_tokens": 1}, messages, run_id, key)
    return run_id


def test_a_run_comes_back_whole(store):
    run_id = save(store, prompt="é <b>x</b>\u202e")
    run = store.get(run_id)
    assert valid_id(run_id) and run["id"] == run_id and run["model"] == "tiny"
    assert run["prompt"] == "é <b>x</b>\u202e" and run["settings"] == {"max_tokens": 1}
    assert run["messages"] == MESSAGES and run["client_ms"] is None


@pytest.mark.parametrize("run_id", ["", "x", "A" * 16, "../../etc/passw", "A" * 15 + "/", "A" * 17, "%" * 16])
def test_unknown_and_malformed_ids_are_none(store, run_id):
    save(store)
    assert store.get(run_id) is None
    assert store.set_client_times(run_id, "k", [1, 2, 3]) is None


def test_client_times_need_the_runs_key(store):
    run_id = save(store, key="secret")
    assert store.set_client_times(run_id, "wrong", [1.0, 2.0, 3.0]) is False
    assert store.get(run_id)["client_ms"] is None
    assert store.set_client_times(run_id, "secret", [1.0, 2.0, 3.0]) is True
    assert store.get(run_id)["client_ms"] == [1.0, 2.0, 3.0]


def test_the_database_is_in_wal_mode(store):
    db = sqlite3.connect(store.path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_the_oldest_runs_go_past_the_count(tmp_path):
    store = RunStore(str(tmp_path / "runs.sqlite3"), max_runs=3, max_bytes=1 << 20)
    ids = [save(store) for _ in range(5)]
    assert store.count() == 3
    assert [store.get(i) is not None for i in ids] == [False, False, True, True, True]


def test_the_oldest_runs_go_past_the_size(tmp_path):
    store = RunStore(str(tmp_path / "runs.sqlite3"), max_runs=100, max_bytes=2500)
    ids = [save(store, prompt="x" * 1000) for _ in range(4)]  # each run is a little over 1,000 bytes
    assert [store.get(i) is not None for i in ids] == [False, False, True, True]


def test_a_run_that_cannot_be_written_leaves_nothing(store):
    with pytest.raises(ValueError):  # NaN is not JSON: refused before anything is written
        save(store, messages=[{"type": "token", "t_ms": float("nan")}])
    assert store.count() == 0
    run_id = save(store)
    with pytest.raises(sqlite3.IntegrityError):  # the same id twice: the second insert rolls back
        store.save("tiny", "other", {}, MESSAGES, run_id, "k")
    assert store.count() == 1 and store.get(run_id)["prompt"] == "Why?"


def test_many_threads_save_and_read_at_once(store):
    """20 runs saved while 50 readers read: all succeed (one connection per thread, WAL, busy timeout)."""
    existing = [save(store) for _ in range(5)]
    errors, saved = [], []
    start = threading.Barrier(70)

    def writer():
        try:
            start.wait()
            saved.append(save(store, messages=MESSAGES * 50))
        except Exception as e:  # noqa: BLE001 -- collected and asserted below
            errors.append(e)

    def reader(i):
        try:
            start.wait()
            assert store.get(existing[i % 5])["messages"] == MESSAGES
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer) for _ in range(20)] + \
              [threading.Thread(target=reader, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == [] and len(saved) == 20
    assert all(store.get(i)["messages"] == MESSAGES * 50 for i in saved)
