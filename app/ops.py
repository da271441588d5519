"""What operators and their tools poll: /health and /metrics."""

from flask import Blueprint, Response

from .openai_api import error_response
from .worker import metrics, scheduler

bp = Blueprint("ops", __name__)


@bp.get("/health")
def health():
    """200 while the engine thread is alive, 503 once it has died."""
    if scheduler().alive:
        return Response("", 200)
    return error_response(503, "the engine thread has stopped; restart the server")


@bp.get("/metrics")
def prometheus():
    """Prometheus text format, vLLM's metric names."""
    return Response(metrics().render(), mimetype="text/plain; version=0.0.4; charset=utf-8")
