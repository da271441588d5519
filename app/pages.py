"""The pages people open, and the one script the app serves from a package."""

from importlib.resources import files

from flask import Blueprint, current_app, render_template, send_file

from engine.config import preset
from engine.questions import SEED_SIZES, question

from .worker import served_model

bp = Blueprint("pages", __name__)
PLOTLY_JS = files("plotly") / "package_data" / "plotly.min.js"


@bp.get("/")
def index():
    """The main page: type a question, watch the four machines and the stopwatches."""
    return render_template("index.html", page_config=page_config(), script="main.js")


@bp.get("/vendor/plotly.min.js")
def plotly_js():
    """plotly.js from the installed plotly package, so the page needs no CDN;
    the browser caches it for a day and revalidates with its ETag."""
    return send_file(PLOTLY_JS, mimetype="text/javascript", max_age=86400)


EMBED_SIZE = (700, 500)  # an embedded run's iframe, width and height, as the share snippet and oEmbed give it


def page_config(model: str | None = None, remote: bool | None = None) -> dict:
    """What the page's scripts need to know about this server (or, for a
    replay, about the model a run was recorded on); for a remote engine,
    only what can be known from outside."""
    c = current_app.config
    config = {
        "model": model or served_model(),
        "remote": bool(c["REMOTE_BASE_URL"]) if remote is None else remote,
        "kv_budget_bytes": c["KV_BUDGET_BYTES"],
        "max_tokens_limit": c["MAX_TOKENS_LIMIT"],
        "default_max_tokens": c["DEFAULT_MAX_TOKENS"],
        "presets": {str(n): question(n) for n in SEED_SIZES},
        "embed_size": EMBED_SIZE,
    }
    if not config["remote"]:
        shape = preset(config["model"])
        config.update(n_layer=shape.n_layer, n_ctx=shape.n_ctx, n_params=shape.n_params,
                      kv_bytes_per_token=shape.kv_bytes_per_token)
    return config
