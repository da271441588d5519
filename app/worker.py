"""The engine, as the app holds it: the model loaded once, warmed up, the
scheduler thread that owns it, and the metrics that watch it. Web threads
reach them through `scheduler()` and `metrics()`; they never call the model."""

import logging
import time

from flask import current_app

from engine.config import preset
from engine.generate import complete
from engine.model import Model
from engine.scheduler import Limits, Scheduler

from .metrics import Metrics

log = logging.getLogger(__name__)
EXTENSION = "word_factory"
METRICS = "word_factory.metrics"


class EngineWorker:
    def init_app(self, app):
        config = preset(app.config["MODEL"])
        start = time.perf_counter()
        model = Model(config)
        log.info("model %s loaded: %.0fM parameters, %.0f MB, in %.2f s", app.config["MODEL"],
                 config.n_params / 1e6, model.weight_bytes / 1e6, time.perf_counter() - start)
        if app.config["WARMUP"]:
            start = time.perf_counter()
            complete(model, "warm-up", 2)  # first calls pay for allocations; no visitor should
            log.info("warm-up run (not counted anywhere): %.2f s", time.perf_counter() - start)
        c = app.config
        limits = Limits(max_running=c["MAX_RUNNING"], max_waiting=c["MAX_WAITING"],
                        kv_budget_bytes=c["KV_BUDGET_BYTES"], step_tokens=c["STEP_TOKENS"],
                        event_buffer=c["EVENT_BUFFER"], timeout_s=c["REQUEST_TIMEOUT_S"])
        watch = Metrics(c["MODEL"], kv_budget_bytes=limits.kv_budget_bytes)
        scheduler = Scheduler(model, limits, on_finish=watch.observe)
        watch.watch(scheduler)
        app.extensions[EXTENSION] = scheduler
        app.extensions[METRICS] = watch


def scheduler() -> Scheduler:
    return current_app.extensions[EXTENSION]


def metrics() -> Metrics:
    return current_app.extensions[METRICS]


engine_worker = EngineWorker()
