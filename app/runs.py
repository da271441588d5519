"""Recorded runs: every finished page run kept in SQLite so a share link can
replay it. This module is the store and nothing else: it knows rows and
JSON, not pages or sockets.

One connection per thread (sqlite3 connections must not be shared), WAL so
readers never wait for the writer, a busy timeout so two writers queue
instead of failing. A run is written in one transaction, so a crash leaves
it either whole or absent. Past `max_runs` or `max_bytes` the oldest runs go.
"""

import hashlib
import json
import re
import secrets
import sqlite3
import threading
import time

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
CREATE INDEX IF NOT EXISTS runs_created ON runs (created);
"""


def new_id() -> str:
    return secrets.token_urlsafe(12)


def valid_id(run_id: str) -> bool:
    return ID_PATTERN.fullmatch(run_id) is not None


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class RunStore:
    def __init__(self, path: str, max_runs: int, max_bytes: int):
        self.path, self.max_runs, self.max_bytes = path, max_runs, max_bytes
        self._local = threading.local()
        self._connection().executescript(SCHEMA)

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use, closed when the thread ends)."""
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL keeps committed runs across a process kill
            db.row_factory = sqlite3.Row
            self._local.db = db
        return db

    def save(self, model: str, prompt: str, settings: dict, messages: list[dict], run_id: str, key: str):
        """Store a finished run under `run_id` (from new_id), then prune the oldest."""
        fields = (json.dumps(settings), json.dumps(messages, ensure_ascii=False, allow_nan=False))
        size = len(prompt.encode(errors="replace")) + sum(len(f) for f in fields)
        db = self._connection()
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
        db.execute("DELETE FROM runs WHERE id IN (SELECT id FROM runs ORDER BY created DESC LIMIT -1 OFFSET ?)",
                   (self.max_runs,))
        # the newest runs whose sizes add up to at most max_bytes stay
        db.execute("DELETE FROM runs WHERE id IN (SELECT id FROM (SELECT id, SUM(size) OVER "
                   "(ORDER BY created DESC, id ROWS UNBOUNDED PRECEDING) AS kept FROM runs) WHERE kept > ?)",
                   (self.max_bytes,))

    def get(self, run_id: str) -> dict | None:
        """The run as a dict (JSON fields decoded), or None if unknown."""
        if not valid_id(run_id):
            return None
        row = self._connection().execute(
            "SELECT id, created, model, prompt, settings, messages, client_ms FROM runs WHERE id = ?",
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
        db = self._connection()
        row = db.execute("SELECT key_hash FROM runs WHERE id = ?", (run_id,)).fetchone() if valid_id(run_id) else None
        if row is None:
            return None
        if not secrets.compare_digest(row["key_hash"], key_hash(key)):
            return False
        text = json.dumps(client_ms, allow_nan=False)
        db.execute("UPDATE runs SET client_ms = ?, size = size + ? WHERE id = ?", (text, len(text), run_id))
        return True

    def count(self) -> int:
        return self._connection().execute("SELECT COUNT(*) FROM runs").fetchone()[0]
