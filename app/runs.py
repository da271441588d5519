"""Recorded runs: every finished page run kept in SQLite so a share link can
replay it. This module is the store and nothing else: it knows rows and
JSON, not pages or sockets.

A connection per operation, so per thread (sqlite3 connections must not be
shared) and closed at once: gunicorn's pooled threads live forever, and a
connection kept per thread would hold three files open per thread. Opening
one costs about 0.1 ms. WAL so readers never wait for the writer, a busy
timeout so two writers queue instead of failing. A run is written in one
transaction, so a crash leaves it either whole or absent. Past `max_runs` or
`max_bytes` the oldest runs go.
"""

import hashlib
import json
import re
import secrets
import sqlite3
import time
from contextlib import closing, contextmanager

ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{16}")  # secrets.token_urlsafe(12): 96 random bits
BUSY_TIMEOUT_MS = 5000
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,        -- unix time the run finished
    model TEXT NOT NULL,
    prompt TEXT NOT NULL,
    settings TEXT NOT NULL,       -- JSON: max_tokens, temperature, top_k, seed
    messages TEXT NOT NULL,       -- JSON: every WebSocket message of the run, as sent, t_ms on the server clock
    client_ms TEXT,               -- JSON: the browser's arrival time of each message, if the visitor shared them
    key_hash TEXT NOT NULL,       -- sha256 of the key that lets the run's own page add its client times
    size INTEGER NOT NULL         -- bytes of the row's text, for the size limit
);
CREATE INDEX IF NOT EXISTS runs_age ON runs (created, id, size);  -- the oldest first, without reading their text
-- how many runs and bytes are stored, kept by triggers so that pruning need not count them on every save
CREATE TABLE IF NOT EXISTS totals (one INTEGER PRIMARY KEY CHECK (one = 1), runs INTEGER NOT NULL, bytes INTEGER NOT NULL);
INSERT OR IGNORE INTO totals SELECT 1, COUNT(*), TOTAL(size) FROM runs;
CREATE TRIGGER IF NOT EXISTS runs_added AFTER INSERT ON runs
    BEGIN UPDATE totals SET runs = runs + 1, bytes = bytes + NEW.size; END;
CREATE TRIGGER IF NOT EXISTS runs_removed AFTER DELETE ON runs
    BEGIN UPDATE totals SET runs = runs - 1, bytes = bytes - OLD.size; END;
CREATE TRIGGER IF NOT EXISTS runs_resized AFTER UPDATE OF size ON runs
    BEGIN UPDATE totals SET bytes = bytes - OLD.size + NEW.size; END;
"""
PRUNE_BATCH = 64  # runs looked at per pruning query


def new_id() -> str:
    return secrets.token_urlsafe(12)


def valid_id(run_id: str) -> bool:
    return ID_PATTERN.fullmatch(run_id) is not None


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class RunStore:
    def __init__(self, path: str, max_runs: int, max_bytes: int):
        self.path, self.max_runs, self.max_bytes = path, max_runs, max_bytes
        with self._connection() as db:
            db.execute("PRAGMA journal_mode=WAL")  # stored in the file: every later connection uses it
            db.executescript(SCHEMA)

    @contextmanager
    def _connection(self):
        with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)) as db:
            db.execute("PRAGMA synchronous=NORMAL")  # WAL keeps committed runs across a process kill
            db.row_factory = sqlite3.Row
            yield db

    def save(self, model: str, prompt: str, settings: dict, messages: list[dict], run_id: str, key: str):
        """Store a finished run under `run_id` (from new_id), then prune the oldest."""
        fields = (json.dumps(settings), json.dumps(messages, ensure_ascii=False, allow_nan=False))
        size = len(prompt.encode(errors="replace")) + sum(len(f) for f in fields)
        with self._connection() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("INSERT INTO runs (id, created, model, prompt, settings, messages, key_hash, size) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (run_id, time.time(), model, prompt, *fields, key_hash(key), size))
                self._prune(db)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def _prune(self, db: sqlite3.Connection):
        """Remove the oldest runs until at most max_runs and max_bytes are stored."""
        runs, stored = db.execute("SELECT runs, bytes FROM totals").fetchone()
        while runs > self.max_runs or stored > self.max_bytes:
            for run_id, size in db.execute("SELECT id, size FROM runs ORDER BY created, id LIMIT ?",
                                           (PRUNE_BATCH,)).fetchall():
                if runs <= self.max_runs and stored <= self.max_bytes:
                    break
                db.execute("DELETE FROM runs WHERE id = ?", (run_id,))
                runs, stored = runs - 1, stored - size

    def get(self, run_id: str) -> dict | None:
        """The run as a dict (JSON fields decoded), or None if unknown."""
        if not valid_id(run_id):
            return None
        with self._connection() as db:
            row = db.execute("SELECT id, created, model, prompt, settings, messages, client_ms FROM runs WHERE id = ?",
                             (run_id,)).fetchone()
        if row is None:
            return None
        run = dict(row)
        for name in ("settings", "messages", "client_ms"):
            run[name] = None if run[name] is None else json.loads(run[name])
        return run

    def set_client_times(self, run_id: str, key: str, client_ms: list) -> bool | None:
        """Attach the browser's arrival times; None if the run is unknown,
        False if `key` is not the run's key."""
        if not valid_id(run_id):
            return None
        text = json.dumps(client_ms, allow_nan=False)
        with self._connection() as db:
            row = db.execute("SELECT key_hash FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                return None
            if not secrets.compare_digest(row["key_hash"], key_hash(key)):
                return False
            db.execute("UPDATE runs SET client_ms = ?, size = size + ? WHERE id = ?", (text, len(text), run_id))
            return True

    def count(self) -> int:
        with self._connection() as db:
            return db.execute("SELECT runs FROM totals").fetchone()[0]
