"""Share and embed: a finished page run is recorded, gets a link (/r/<id>)
that replays it, downloads (JSON, CSV, Perfetto trace), an embed view for
other sites' iframes (/embed) and an oEmbed answer for blog platforms.

Which pages other sites may frame is decided in app/__init__.py (FRAMEABLE).
"""

import logging
import math
import os
import secrets
import sqlite3
import time
from urllib.parse import urlsplit

from flask import Blueprint, Response, abort, current_app, render_template, request, url_for

from . import exports, wire
from .openai_api import error_response
from .pages import EMBED_SIZE, page_config
from .runs import RunStore, new_id
from .worker import served_model

log = logging.getLogger(__name__)
bp = Blueprint("share", __name__)
STORE = "word_factory.runs"
MAX_EMBED_PROMPT_CHARS = 2000  # a prompt in a query string; longer ones belong in a recorded run
TRUE, FALSE = ("1", "true", "yes"), ("", "0", "false", "no")


def init_app(app):
    c = app.config
    path = c["RUNS_DB"] or os.path.join(app.instance_path, "runs.sqlite3")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    app.extensions[STORE] = RunStore(path, c["RUNS_MAX"], c["RUNS_MAX_BYTES"])


def store() -> RunStore:
    return current_app.extensions[STORE]


def record(question: wire.Generate, messages: list[dict]) -> dict:
    """Store a finished run (its question, and every message sent for it);
    return the fields its `done` message gains: the run's id, its link, and
    the key that lets this visitor add their browser's times (nobody else
    gets it). Empty if the store failed: the answer still arrives, only
    unshareable."""
    run_id, key = new_id(), secrets.token_urlsafe(16)
    s = question.sampling
    settings = {"max_tokens": question.max_tokens, "temperature": s.temperature, "top_k": s.top_k, "seed": s.seed,
                "remote": bool(current_app.config["REMOTE_BASE_URL"])}
    try:
        store().save(served_model(), question.prompt, settings, messages, run_id, key)
    except (sqlite3.Error, OSError, ValueError):
        log.exception("could not record a run; it cannot be shared")
        return {}
    # a path, not a URL: the Host header a client sent is not ours to repeat; pages resolve it against their own
    return {"run_id": run_id, "share_url": url_for("share.replay", run_id=run_id), "share_key": key}


def recorded(run_id: str) -> dict:
    run = store().get(run_id)
    if run is None:
        abort(404, description="There is no run at this link. It may never have existed, or it was among the "
                               "oldest runs, which the factory removes to make room.")
    return run


def replay_config(run: dict, autoplay: bool) -> dict:
    """The page config of a replay: the recording's model and messages."""
    config = page_config(run["model"], remote=run["settings"].get("remote", False))
    config.update(run={"messages": run["messages"], "client_ms": run["client_ms"]}, autoplay=autoplay,
                  share_url=url_for("share.replay", run_id=run["id"]))
    return config


@bp.get("/r/<run_id>")
def replay(run_id):
    """A recorded run, replayed at its recorded speed."""
    run = recorded(run_id)
    share_url = url_for("share.replay", run_id=run_id, _external=True)
    return render_template("replay.html", run=run, page_config=replay_config(run, autoplay=False), script="replay.js",
                           recorded=time.strftime("%Y-%m-%d %H:%M", time.gmtime(run["created"])),
                           oembed_url=url_for("share.oembed", url=share_url, format="json", _external=True))


@bp.get("/r/<run_id>/run.json")
def run_json(run_id):
    run = recorded(run_id)
    return download(wire.dumps(run), "application/json", f"word-factory-{run_id}.json")


@bp.get("/r/<run_id>/tokens.csv")
def run_csv(run_id):
    return download(exports.to_csv(recorded(run_id)), "text/csv", f"word-factory-{run_id}.csv")


@bp.get("/r/<run_id>/trace.json")
def run_trace(run_id):
    trace = exports.to_trace(recorded(run_id))
    return download(wire.dumps(trace), "application/json", f"word-factory-{run_id}-trace.json")


def download(body: str, mimetype: str, filename: str) -> Response:
    return Response(body, mimetype=mimetype, headers={"Content-Disposition": f'attachment; filename="{filename}"'})


@bp.post("/r/<run_id>/client-times")
def client_times(run_id):
    """The run's own page adds its browser's arrival times: {"key", "client_ms": [one per message]}.
    Errors have the API's shape."""
    try:
        body = wire.loads(request.get_data(cache=False), "the request body")
    except wire.WireError as e:
        return error_response(400, str(e))
    run = store().get(run_id)
    if run is None:
        return error_response(404, "no run with this id")
    key, times = (body.get("key"), body.get("client_ms")) if isinstance(body, dict) else (None, None)
    if not isinstance(key, str):
        return error_response(400, "key must be the share_key string of the run's done message", "key")
    count = len(run["messages"])
    if not (isinstance(times, list) and len(times) == count and all(
            isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) for t in times)):
        return error_response(400, f"client_ms must be a list of {count} finite numbers, one per message", "client_ms")
    if not store().set_client_times(run_id, key, times):
        return error_response(403, "this key does not belong to this run", "key")
    return Response(status=204)


@bp.get("/embed")
def embed():
    """A compact view for other sites' iframes: ?prompt=...&max_tokens=... runs
    a question live, ?run=<id> replays a recorded run; autoplay=1, theme=light|dark."""
    args, c = request.args, current_app.config
    autoplay = flag(args.get("autoplay", ""), "autoplay")
    theme = args.get("theme", "auto")
    if theme not in ("light", "dark", "auto"):
        abort(400, description=f"theme must be light, dark or auto, not {theme!r}")
    home = url_for("pages.index", _external=True)
    if "run" in args:
        if "prompt" in args:
            abort(400, description="give either prompt (a live question) or run (a recorded run), not both")
        run = recorded(args["run"])
        return render_template("embed.html", page_config=replay_config(run, autoplay), prompt=run["prompt"],
                               theme=theme, home=home, script="replay.js")
    prompt = args.get("prompt", "")
    if not prompt:
        abort(400, description="/embed needs ?prompt=<a question> or ?run=<the id of a recorded run>")
    if len(prompt) > MAX_EMBED_PROMPT_CHARS:
        abort(400, description=f"prompt is longer than {MAX_EMBED_PROMPT_CHARS} characters: record a run on the "
                               "main page and embed it with ?run=<id> instead")
    max_tokens = args.get("max_tokens", str(c["DEFAULT_MAX_TOKENS"]))
    if not (max_tokens.isascii() and max_tokens.isdigit() and 1 <= int(max_tokens) <= c["MAX_TOKENS_LIMIT"]):
        abort(400, description=f"max_tokens must be a whole number from 1 to {c['MAX_TOKENS_LIMIT']}")
    config = page_config()
    config.update(prompt=prompt, max_tokens=int(max_tokens), autoplay=autoplay, run=None)
    return render_template("embed.html", page_config=config, prompt=prompt, theme=theme, home=home, script="replay.js")


def flag(value: str, name: str) -> bool:
    if value.lower() in TRUE + FALSE:
        return value.lower() in TRUE
    abort(400, description=f"{name} must be 1 or 0")


@bp.get("/oembed")
def oembed():
    """oEmbed (oembed.com) for a run's link: a "rich" answer whose html is the embed iframe."""
    url = request.args.get("url", "")
    if request.args.get("format", "json") != "json":
        abort(501, description="only format=json is served")
    parts = urlsplit(url)
    segments = parts.path.split("/")
    if parts.netloc != request.host or len(segments) != 3 or segments[1] != "r":
        abort(404, description="url must be the link of a run recorded here: /r/<id>")
    run = recorded(segments[2])
    width, height = bounded(EMBED_SIZE[0], "maxwidth"), bounded(EMBED_SIZE[1], "maxheight")
    src = url_for("share.embed", run=run["id"], _external=True)
    html = render_template("oembed_iframe.html", src=src, width=width, height=height)
    return {"version": "1.0", "type": "rich", "provider_name": "Word Factory",
            "provider_url": url_for("pages.index", _external=True), "title": f"Word Factory run {run['id']}",
            "html": html, "width": width, "height": height}


def bounded(size: int, name: str) -> int:
    """`size`, shrunk to the consumer's maxwidth/maxheight if it gave one."""
    raw = request.args.get(name)
    if raw is None:
        return size
    if not (raw.isascii() and raw.isdigit() and int(raw) > 0):
        abort(400, description=f"{name} must be a positive whole number")
    return min(size, int(raw))
