"""The web edge of Word Factory: pages, the WebSocket, and the engine worker
they share. It parses and checks requests, hands them to engine/ and turns
engine events into wire messages; it never runs the model itself."""

from flask import Flask, current_app, render_template, request
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

from . import ratelimit, share
from .config import from_environment
from .openai_api import bp as openai_bp
from .openai_api import error_response
from .ops import bp as ops_bp
from .pages import bp as pages_bp
from .worker import engine_worker
from .ws import reject_foreign_origin, sock

# Plotly injects <style> elements at run time, hence 'unsafe-inline' for styles
# only; no script runs that the app did not serve itself.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors {}")
# The pages other sites may frame (FRAME_ANCESTORS); every other page only by this site itself.
FRAMEABLE = {"share.embed", "share.replay"}


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
    hops = app.config["PROXY_HOPS"]
    if hops:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)
    app.before_request(reject_foreign_origin)
    app.after_request(security_headers)
    app.register_error_handler(HTTPException, http_error)
    sock.init_app(app)
    app.register_blueprint(pages_bp)
    app.register_blueprint(openai_bp)
    app.register_blueprint(ops_bp)
    app.register_blueprint(share.bp)
    share.init_app(app)
    ratelimit.init_app(app)
    engine_worker.init_app(app)
    return app


def security_headers(response):
    if request.endpoint in FRAMEABLE:
        ancestors = current_app.config["FRAME_ANCESTORS"]
    else:
        ancestors = "'self'"
        response.headers.setdefault("X-Frame-Options", "SAMEORIGIN")  # for browsers without frame-ancestors
    response.headers.setdefault("Content-Security-Policy", CSP.format(ancestors))
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    return response


def http_error(e: HTTPException):
    """HTTP errors (unknown path, wrong method, bad query, body too large):
    the API's JSON shape under /v1/, a page of the site's own look elsewhere."""
    if request.path.startswith("/v1/"):
        response = error_response(e.code, e.description)
        if e.code == 405:
            response.headers["Allow"] = ", ".join(e.valid_methods or [])
        return response
    page = render_template("error.html", code=e.code, name=e.name, message=e.description)
    response = e.get_response()
    response.set_data(page)
    response.mimetype = "text/html"
    return response
