"""Defaults and limits of the web edge, each overridable by an environment
variable of the same name prefixed with WF_ (WF_MODEL=tiny, WF_PORT=9000...)."""

import os

DEFAULTS = {
    "MODEL": "gpt2-small",  # a preset of engine/config.py
    "MODEL_ALIASES": "tiny",  # comma-separated names the API also answers to (the seed's client asks for "tiny")
    "HOST": "127.0.0.1",
    "PORT": 8000,
    "MAX_TOKENS_LIMIT": 1024,  # largest max_tokens a visitor may ask for
    "DEFAULT_MAX_TOKENS": 64,
    "MAX_MESSAGE_BYTES": 64 * 1024,  # a bigger WebSocket message closes the socket with 1009
    "MAX_BODY_BYTES": 1024 * 1024,  # a bigger API request body gets 413
    "MAX_RUNNING": 16,  # requests typing at once, sharing each engine step
    "MAX_WAITING": 64,  # requests allowed to wait in line
    "KV_BUDGET_BYTES": 1 << 30,  # KV cache all running requests may come to hold (admission waits beyond it)
    "STEP_TOKENS": 32,  # rows per engine step while someone types: a long prompt is read this much at a time
    "EVENT_BUFFER": 8192,  # unread events before a client that stopped reading is dropped
    "REQUEST_TIMEOUT_S": 600,  # a request unfinished this long after arriving is stopped
    "WS_PING_INTERVAL": 25,  # seconds; a client that stops answering pings is dropped
    "WARMUP": True,  # run one short request at start so no visitor's run is the cold one
    # Recorded runs (share links, /r/<id>) and hosting:
    "RUNS_DB": "",  # SQLite file of recorded runs; empty: instance/runs.sqlite3 beside the app
    "RUNS_MAX": 10_000,  # the oldest runs are removed past this many...
    "RUNS_MAX_BYTES": 512 * 1024 * 1024,  # ...or past this much stored text
    "RATE_LIMIT_PER_MINUTE": 60,  # new generations per client address per minute (page and API together); 0: none
    "PROXY_HOPS": 0,  # trusted proxies in front of the app: X-Forwarded-For/-Proto/-Host are read through this many
    "ALLOWED_ORIGINS": "",  # comma-separated extra origins whose pages may open the WebSocket (https://x.example)
    "FRAME_ANCESTORS": "*",  # who may frame /embed and /r/<id>: CSP frame-ancestors sources, space-separated
    # Time a remote OpenAI-compatible engine instead of the embedded model (operators only):
    "REMOTE_BASE_URL": "",  # e.g. http://127.0.0.1:8001/v1 for vLLM; empty: the embedded model
    "REMOTE_MODEL": "",  # the name the remote engine serves
    "REMOTE_API_KEY": "EMPTY",
}


def from_environment(environ=os.environ) -> dict:
    """DEFAULTS, with WF_<NAME> variables applied (converted to the default's type)."""
    config = dict(DEFAULTS)
    for name, default in DEFAULTS.items():
        raw = environ.get(f"WF_{name}")
        if raw is None:
            continue
        if isinstance(default, bool):
            if raw.lower() not in ("1", "true", "yes", "0", "false", "no"):
                raise ValueError(f"WF_{name} must be true or false, got {raw!r}")
            config[name] = raw.lower() in ("1", "true", "yes")
        elif isinstance(default, int):
            try:
                config[name] = int(raw)
            except ValueError:
                raise ValueError(f"WF_{name} must be a whole number, got {raw!r}") from None
        else:
            config[name] = raw
    return config
