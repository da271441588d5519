"""The web edge of Word Factory: pages, the WebSocket, and the engine worker
they share. It parses and checks requests, hands them to engine/ and turns
engine events into wire messages; it never runs the model itself."""

from flask import Flask
from werkzeug.exceptions import HTTPException

from .config import from_environment
from .openai_api import bp as openai_bp
from .ops import api_http_error
from .ops import bp as ops_bp
from .pages import bp as pages_bp
from .worker import engine_worker
from .ws import reject_foreign_origin, sock

# Plotly injects <style> elements at run time, hence 'unsafe-inline' for styles
# only; no script runs that the app did not serve itself.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")


def create_app(config: dict | None = None) -> Flask:
    """Build the app: settings (defaults, then WF_* variables, then `config`),
    the model loaded once and its engine thread started."""
    app = Flask(__name__, static_folder="../static", template_folder="../templates")
    app.config.update(from_environment())
    app.config.update(config or {})
    app.config["MAX_CONTENT_LENGTH"] = app.config["MAX_BODY_BYTES"]
    app.config["SOCK_SERVER_OPTIONS"] = {
        "max_message_size": app.config["MAX_MESSAGE_BYTES"],
        "ping_interval": app.config["WS_PING_INTERVAL"],
    }
    app.before_request(reject_foreign_origin)
    app.after_request(security_headers)
    app.register_error_handler(HTTPException, api_http_error)
    sock.init_app(app)
    app.register_blueprint(pages_bp)
    app.register_blueprint(openai_bp)
    app.register_blueprint(ops_bp)
    engine_worker.init_app(app)
    return app


def security_headers(response):
    response.headers.setdefault("Content-Security-Policy", CSP)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    return response
