"""The server under test: the app under the repo's gunicorn configuration on
a free loopback port, watched from outside -- its worker's threads, open
files and memory from /proc, the engine's state from /metrics."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, workdir: Path, model: str, settings: dict):
        self.workdir, self.port = workdir, free_port()
        self.db = workdir / "runs.sqlite3"
        self.log = workdir / "gunicorn.log"
        self.env = {**os.environ, "WF_MODEL": model, "WF_HOST": "127.0.0.1", "WF_PORT": str(self.port),
                    "WF_RUNS_DB": str(self.db), **{f"WF_{k}": str(v) for k, v in settings.items()}}
        self.process = None

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def start(self, timeout: float = 120):
        with self.log.open("a") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py"], cwd=ROOT,
                                            env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self.healthy():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start; its log:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.2)

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.http + "/health", timeout=5) as r:
                return r.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def kill(self):
        """SIGKILL to gunicorn and its worker at once: no cleanup of any kind."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def worker_pid(self) -> int:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        return int(children[0])

    def sample(self) -> dict:
        """The worker's threads, open files and resident memory now."""
        pid = self.worker_pid()
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        return {"threads": int(status["Threads"]), "files": len(os.listdir(f"/proc/{pid}/fd")),
                "rss_mb": int(status["VmRSS"].split()[0]) / 1024}

    def metrics(self) -> dict:
        """The engine's gauges and counters from /metrics (the vllm:* names)."""
        with urllib.request.urlopen(self.http + "/metrics", timeout=10) as r:
            text = r.read().decode()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name.split("{")[0] if "{" in name and "outcome" not in name else name] = float(value)
        return {"running": values.get("vllm:num_requests_running", 0),
                "waiting": values.get("vllm:num_requests_waiting", 0),
                "kv_usage": values.get("vllm:kv_cache_usage_perc", 0),
                "tokens": values.get("vllm:generation_tokens_total", 0),
                "prompt": values.get("vllm:prompt_tokens_total", 0)}

    def log_problems(self) -> list[str]:
        """Lines of the server's log that show an unhandled error."""
        return [line for line in self.log.read_text(errors="replace").splitlines()
                if "Traceback" in line or "Error handling request" in line or " 500 " in line]
