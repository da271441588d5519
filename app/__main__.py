"""`python -m app`: serve Word Factory on http://127.0.0.1:8000.

Flags override the WF_HOST, WF_PORT and WF_MODEL environment variables, which
override the defaults in app/config.py.
"""

import argparse
import logging
import signal
import sys

from engine.config import PRESETS

from . import create_app
from .config import from_environment
from .server import make_threaded_server
from .worker import scheduler


def main(argv=None):
    try:
        env = from_environment()
    except ValueError as e:
        sys.exit(f"error: {e}")
    p = argparse.ArgumentParser(prog="python -m app", description="Serve Word Factory's page and WebSocket.")
    p.add_argument("--host", default=env["HOST"], help="address to listen on (default %(default)s)")
    p.add_argument("--port", type=int, default=env["PORT"], help="port (default %(default)s)")
    p.add_argument("--model", default=env["MODEL"], choices=sorted(PRESETS), help="model preset (default %(default)s)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    app = create_app({"HOST": args.host, "PORT": args.port, "MODEL": args.model})
    server = make_threaded_server(app, args.host, args.port)  # a busy port: Werkzeug says so and exits
    print(f"Word Factory is serving {args.model} on http://{args.host}:{server.server_port}/  (Ctrl+C stops it)",
          flush=True)
    # SIGTERM (a service manager stopping us) ends as cleanly as Ctrl+C does
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        with app.app_context():
            scheduler().close(timeout=5)


if __name__ == "__main__":
    main()
