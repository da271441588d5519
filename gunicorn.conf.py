"""Host Word Factory with gunicorn: `gunicorn -c gunicorn.conf.py`.

One process, many threads. The model and its engine thread live in the
process (one copy of the weights, one scheduler batching everyone), so there
is exactly one worker; more workers would each load the model and split the
machine's cores and memory between engines that cannot batch together.

Each open WebSocket and each streaming API response holds a thread for as
long as it lasts, so WF_THREADS bounds how many visitors can be connected at
once (an idle tab counts: it keeps its socket open). Size it above
WF_MAX_RUNNING + WF_MAX_WAITING plus the idle tabs you expect, with room left
for /health and page loads; a thread costs little memory while it waits.
All WF_* settings of app/config.py apply as well.
"""

import logging
import os

wsgi_app = "app:create_app()"
bind = f"{os.environ.get('WF_HOST', '0.0.0.0')}:{os.environ.get('WF_PORT', '8000')}"
workers = 1  # one engine: see above
worker_class = "gthread"
threads = int(os.environ.get("WF_THREADS", "128"))
# The worker's heartbeat does not depend on requests finishing (gthread), so
# this only catches a worker that hangs outright, e.g. while loading the model.
timeout = 120
graceful_timeout = 10  # on SIGTERM, open sockets get this long before the worker exits
keepalive = 5
accesslog = os.environ.get("WF_ACCESS_LOG") or None  # "-" for stdout
errorlog = "-"
loglevel = os.environ.get("WF_LOG_LEVEL", "info")

# The app's own log lines (model loaded, warm-up, failures) to stderr like gunicorn's.
logging.basicConfig(level=loglevel.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
control_socket_disable = True  # gunicorn 25+'s control socket in $HOME: not needed to run a demo
