"""The engine, as the app holds it: either the embedded model (loaded once,
warmed up, owned by the scheduler thread) or a remote OpenAI-compatible
engine timed from outside -- plus the metrics that watch it. Web threads
reach them through `scheduler()` and `metrics()`; they never call a model."""

import logging
import queue
import time

from flask import current_app

from engine.config import preset
from engine.events import Done, Failed
from engine.generate import complete
from engine.model import Model
from engine.scheduler import Limits, Scheduler

from .metrics import Metrics
from .remote import RemoteEngine

log = logging.getLogger(__name__)
EXTENSION = "word_factory"
METRICS = "word_factory.metrics"
# What both edges (page and API) say when the engine will not take a request.
BUSY = "the factory is busy: too many requests are waiting, try again soon"
STOPPED = "the engine is not running; the server needs a restart"
RETRY_AFTER_S = 2


class EngineWorker:
    def init_app(self, app):
        c = app.config
        watch = Metrics(served_model(app), kv_budget_bytes=c["KV_BUDGET_BYTES"])
        if c["REMOTE_BASE_URL"]:
            engine = RemoteEngine(c["REMOTE_BASE_URL"], c["REMOTE_MODEL"], c["REMOTE_API_KEY"],
                                  max_running=c["MAX_RUNNING"], timeout_s=c["REQUEST_TIMEOUT_S"],
                                  on_finish=watch.observe)
            log.info("timing the remote engine %s (model %s) from outside", c["REMOTE_BASE_URL"], c["REMOTE_MODEL"])
        else:
            engine = Scheduler(load_model(app), Limits(
                max_running=c["MAX_RUNNING"], max_waiting=c["MAX_WAITING"], kv_budget_bytes=c["KV_BUDGET_BYTES"],
                step_tokens=c["STEP_TOKENS"], event_buffer=c["EVENT_BUFFER"], timeout_s=c["REQUEST_TIMEOUT_S"]),
                on_finish=watch.observe)
        watch.watch(engine)
        app.extensions[EXTENSION] = engine
        app.extensions[METRICS] = watch


def load_model(app) -> Model:
    config = preset(app.config["MODEL"])
    start = time.perf_counter()
    model = Model(config)
    log.info("model %s loaded: %.0fM parameters, %.0f MB, in %.2f s", app.config["MODEL"],
             config.n_params / 1e6, model.weight_bytes / 1e6, time.perf_counter() - start)
    if app.config["WARMUP"]:
        start = time.perf_counter()
        complete(model, "warm-up", 2)  # first calls pay for allocations; no visitor should
        log.info("warm-up run (not counted anywhere): %.2f s", time.perf_counter() - start)
    return model


def served_model(app=None) -> str:
    """The name of the model this factory serves or times."""
    c = (app or current_app).config
    return c["REMOTE_MODEL"] if c["REMOTE_BASE_URL"] else c["MODEL"]


def scheduler() -> Scheduler | RemoteEngine:
    return current_app.extensions[EXTENSION]


def context_length() -> int | None:
    """The embedded model's context; None for a remote engine, whose limits it enforces itself."""
    engine = scheduler()
    return engine.model.config.n_ctx if isinstance(engine, Scheduler) else None


def events_until_end(running, engine, poll_s: float):
    """A request's events through its Done or Failed, yielding None whenever
    `poll_s` passes without one (so a caller can look after its client in
    between); an engine that dies meanwhile ends it with a Failed, not a hang."""
    while True:
        try:
            event = running.events.get(timeout=poll_s)
        except queue.Empty:
            if engine.alive:
                yield None
                continue
            event = Failed(time.perf_counter(), "the engine stopped while serving this request")
        yield event
        if isinstance(event, (Done, Failed)):
            return


def metrics() -> Metrics:
    return current_app.extensions[METRICS]


engine_worker = EngineWorker()
