"""One engine thread, many callers: the factory's front desk.

The model is not thread-safe and must not be: one thread owns it and every
KV cache. Callers (web threads) `submit` a request and get a `Request` whose
`events` queue the engine fills; they read it from their own thread and may
`cancel` at any time. Requests are served one at a time in arrival order; a
waiting request hears its place in line (`Queued`) each time it moves up.

Cancellation takes effect between two events of the running request -- at
most one layer of prefill or one decode step -- and its cache is freed then.
"""

import collections
import logging
import queue
import threading
import time
from contextlib import closing

from .events import Done, Failed, Prefilled, Queued, Token
from .generate import check_request, generate
from .model import Model
from .sampling import GREEDY, SamplingParams

log = logging.getLogger(__name__)


class QueueFull(Exception):
    """The waiting line is at its limit; the caller should try again later."""


class EngineStopped(Exception):
    """The engine thread is not running, so nothing can be served."""


class Request:
    """One submitted request: read `events` until Done or Failed arrives."""

    def __init__(self, scheduler: "Scheduler", prompt: str, max_tokens: int, sampling: SamplingParams,
                 stop: tuple[str, ...], arrived: float):
        self.prompt, self.max_tokens, self.sampling, self.stop = prompt, max_tokens, sampling, stop
        self.arrived = arrived
        self.started: float | None = None  # when the engine took it out of the line
        self.prompt_tokens = 0
        self.token_times: list[float] = []  # for the metrics' inter-token histogram
        self.events: queue.SimpleQueue = queue.SimpleQueue()
        self._scheduler = scheduler
        self._cancelled = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def cancel(self):
        """Stop this request wherever it is; a Done("cancelled") event follows
        unless it had already finished."""
        self._cancelled.set()
        self._scheduler._withdraw(self)


class Scheduler:
    """`on_finish(request, last_event)`, if given, hears every request's end
    (Done, including cancelled, or Failed), on the engine thread or the
    cancelling one; it must be quick and must not raise."""

    def __init__(self, model: Model, max_waiting: int = 64, on_finish=None):
        self.model = model
        self.max_waiting = max_waiting
        self.on_finish = on_finish or (lambda request, event: None)
        self.kv_bytes = 0  # what the running request's cache holds now
        self._waiting: collections.deque[Request] = collections.deque()
        self._running: Request | None = None
        self._wakeup = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="engine", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def running(self) -> int:
        return 0 if self._running is None else 1

    def submit(self, prompt: str, max_tokens: int, sampling: SamplingParams = GREEDY,
               arrived: float | None = None, stop: tuple[str, ...] = ()) -> Request:
        """Queue a request. Raises ValueError (a ParamError) for a bad request,
        QueueFull when the line is at its limit and EngineStopped if the engine
        is gone -- all before anything is queued."""
        arrived = time.perf_counter() if arrived is None else arrived
        check_request(self.model.config, prompt, max_tokens, sampling, stop)
        request = Request(self, prompt, max_tokens, sampling, stop, arrived)
        with self._wakeup:
            if self._stopping or not self.alive:
                raise EngineStopped("the engine is not running")
            if len(self._waiting) >= self.max_waiting:
                raise QueueFull(f"{len(self._waiting)} requests are already waiting")
            self._waiting.append(request)
            request.events.put(Queued(time.perf_counter(), len(self._waiting)))
            self._wakeup.notify()
        return request

    def close(self, timeout: float | None = None):
        """Stop the engine thread once the running request is over; waiting
        requests are cancelled."""
        with self._wakeup:
            self._stopping = True
            abandoned = list(self._waiting)
            self._wakeup.notify()
        for request in abandoned:
            request.cancel()
        if self._running is not None:
            self._running.cancel()
        self._thread.join(timeout)

    def _withdraw(self, request: Request):
        """Take a cancelled request out of the line, if it is still waiting."""
        with self._wakeup:
            if request not in self._waiting:
                return
            self._waiting.remove(request)
            self._announce_positions()
        self._finish(request, Done(time.perf_counter(), "cancelled", None))

    def _announce_positions(self):
        now = time.perf_counter()
        for position, request in enumerate(self._waiting, start=1):
            request.events.put(Queued(now, position))

    def _loop(self):
        while True:
            with self._wakeup:
                while not self._waiting and not self._stopping:
                    self._wakeup.wait()
                if self._stopping:
                    return
                self._running = self._waiting.popleft()
                self._running.started = time.perf_counter()
                self._announce_positions()
            try:
                self._serve(self._running)
            finally:
                self._running, self.kv_bytes = None, 0

    def _serve(self, request: Request):
        """Run one request, relaying its events, until it ends or is cancelled."""
        try:
            with closing(generate(self.model, request.prompt, request.max_tokens, request.sampling,
                                  request.arrived, request.stop)) as run:  # closing frees the KV cache at once
                for event in run:
                    if request.cancelled:
                        return self._finish(request, Done(time.perf_counter(), "cancelled", None))
                    if isinstance(event, (Prefilled, Token)):
                        self.kv_bytes = event.kv_bytes
                    if isinstance(event, Prefilled):
                        request.prompt_tokens = event.prompt_tokens
                    elif isinstance(event, Token):
                        request.token_times.append(event.t)
                    elif isinstance(event, Done):
                        return self._finish(request, event)
                    request.events.put(event)
        except Exception as error:  # one request's failure must not stop the factory
            log.exception("request failed")
            self._finish(request, Failed(time.perf_counter(), f"the engine failed on this request: {error}"))

    def _finish(self, request: Request, event: Done | Failed):
        try:
            self.on_finish(request, event)
        except Exception:
            log.exception("on_finish failed")  # bookkeeping must never lose the answer's end
        request.events.put(event)
