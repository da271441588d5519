"""One engine thread, many callers: the factory's front desk and its bus.

The model is not thread-safe and must not be: one thread owns it and every
KV cache. Callers (web threads) `submit` a request and get a `Request` whose
`events` queue the engine fills; they read it from their own thread and may
`cancel` at any time.

Continuous batching: each step admits waiting requests in arrival order
while the running limit and the KV budget allow, then runs ONE model step for
every running request together -- a decode token for each one typing, plus a
chunk of a prompt being read within the step's token budget, so a long prompt
shares steps instead of freezing everyone ("filling the bus"). A waiting
request hears its place in line (`Queued`) each time it moves up.

Cancellation -- by the caller, or by the time limit -- takes effect at the
next step boundary and frees the cache. A caller that stops reading is
dropped once its bounded event buffer is full, instead of stalling the engine
or growing memory.
"""

import collections
import logging
import queue
import threading
import time
from dataclasses import dataclass, replace

from .errors import ParamError
from .events import Done, Failed, Floor, Queued, Token
from .memory import release_free_memory
from .model import Model
from .sampling import GREEDY, SamplingParams
from .sequence import READ_CHUNK, Sequence, check_request, step

log = logging.getLogger(__name__)


class QueueFull(Exception):
    """The waiting line is at its limit; the caller should try again later."""


class EngineStopped(Exception):
    """The engine thread is not running, so nothing can be served."""


@dataclass(frozen=True)
class Limits:
    max_running: int = 16  # requests typing at once (the bus's seats)
    max_waiting: int = 64  # requests allowed to wait in line
    kv_budget_bytes: int = 1 << 30  # KV memory all running requests may come to hold
    step_tokens: int = 32  # rows per step while someone is typing: bounds everyone's gap
    idle_chunk: int = READ_CHUNK  # prompt tokens per step when nobody is typing
    event_buffer: int = 8192  # unread events before a silent reader is dropped
    timeout_s: float = 600.0  # a request still unfinished this long after arriving is stopped


class Request:
    """One submitted request: read `events` until Done or Failed arrives."""

    def __init__(self, scheduler: "Scheduler", prompt: str, max_tokens: int, sampling: SamplingParams,
                 stop: tuple[str, ...], arrived: float, kv_need: int):
        self.prompt, self.max_tokens, self.sampling, self.stop = prompt, max_tokens, sampling, stop
        self.arrived, self.kv_need = arrived, kv_need
        self.started: float | None = None  # when the engine took it out of the line
        self.seat = 0  # its anonymous seat on the bus while it runs (1, 2, ...)
        self.seq: Sequence | None = None
        self.dropped = False  # its reader stopped reading; it has had its last event
        self.events: queue.Queue = queue.Queue(scheduler.limits.event_buffer)
        self._scheduler = scheduler
        self._cancelled = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def prompt_tokens(self) -> int:
        return 0 if self.seq is None else len(self.seq.ids)

    @property
    def token_times(self) -> list[float]:
        return [] if self.seq is None else self.seq.token_times

    def cancel(self):
        """Stop this request wherever it is; a Done("cancelled") event follows
        unless it had already finished."""
        self._cancelled.set()
        self._scheduler._withdraw(self)


class Scheduler:
    """`on_finish(request, last_event)`, if given, hears every request's end
    (Done, including cancelled, or Failed), on the engine thread or the
    cancelling one; it must be quick and must not raise."""

    def __init__(self, model: Model, limits: Limits = Limits(), on_finish=None):
        self.model = model
        self.limits = limits
        self.on_finish = on_finish or (lambda request, event: None)
        self._waiting: collections.deque[Request] = collections.deque()
        self._running: list[Request] = []
        self._kv_reserved = 0  # worst-case KV bytes of the running requests
        self.tokens_made = 0  # by the whole factory, since it started
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
        return len(self._running)

    @property
    def kv_bytes(self) -> int:
        """What the running requests' caches hold now."""
        return sum(r.seq.cache.bytes_used for r in list(self._running) if r.seq is not None)

    def submit(self, prompt: str, max_tokens: int, sampling: SamplingParams = GREEDY,
               arrived: float | None = None, stop: tuple[str, ...] = ()) -> Request:
        """Queue a request. Raises ValueError (a ParamError) for a bad request,
        QueueFull when the line is at its limit and EngineStopped if the engine
        is gone -- all before anything is queued."""
        arrived = time.perf_counter() if arrived is None else arrived
        config = self.model.config
        ids = check_request(config, prompt, max_tokens, sampling, stop)
        kv_need = (len(ids) + min(max_tokens, config.n_ctx - len(ids))) * config.kv_bytes_per_token
        if kv_need > self.limits.kv_budget_bytes:
            raise ParamError("max_tokens", f"this request could hold {kv_need / 2**20:.0f} MiB of KV cache, more than "
                                           f"the factory's budget of {self.limits.kv_budget_bytes / 2**20:.0f} MiB")
        request = Request(self, prompt, max_tokens, sampling, stop, arrived, kv_need)
        with self._wakeup:
            if self._stopping or not self.alive:
                raise EngineStopped("the engine is not running")
            if len(self._waiting) >= self.limits.max_waiting:
                raise QueueFull(f"{len(self._waiting)} requests are already waiting")
            self._waiting.append(request)
            request.events.put(Queued(time.perf_counter(), len(self._waiting)))
            self._wakeup.notify()
        return request

    def close(self, timeout: float | None = None):
        """Stop the engine thread after its current step; every request still
        waiting or running is cancelled."""
        with self._wakeup:
            self._stopping = True
            abandoned = list(self._waiting) + list(self._running)
            self._wakeup.notify()
        for request in abandoned:
            request.cancel()
        self._thread.join(timeout)
        for request in list(self._running):  # the thread has stopped: their step will not come
            self._retire(request, Done(time.perf_counter(), "cancelled", None))

    def _withdraw(self, request: Request):
        """Take a cancelled request out of the line, if it is still waiting;
        a running one is retired by the engine at its next step."""
        with self._wakeup:
            if request not in self._waiting:
                return
            self._waiting.remove(request)
            self._announce_positions()
        self._finish(request, Done(time.perf_counter(), "cancelled", None))

    def _announce_positions(self):
        now = time.perf_counter()
        for position, request in enumerate(self._waiting, start=1):
            self._deliver(request, Queued(now, position))

    def _loop(self):
        fell_idle = False
        while True:
            if fell_idle:
                release_free_memory()  # the crowd has gone: give its freed caches back, while nobody waits
            with self._wakeup:
                while not self._waiting and not self._running and not self._stopping:
                    self._wakeup.wait()
                if self._stopping:
                    return
                admitted = self._admit()
            for request in admitted:
                self._deliver(request, request.seq.tokenized_event())
            self._step()
            fell_idle = not self._running and not self._waiting  # a benign race: at worst one trim too many or few

    def _admit(self) -> list[Request]:
        """Move requests from the line to the bus, in arrival order, while the
        running limit and the KV budget allow (the first always fits alone)."""
        admitted = []
        while self._waiting and len(self._running) < self.limits.max_running:
            request = self._waiting[0]
            if self._running and self._kv_reserved + request.kv_need > self.limits.kv_budget_bytes:
                break  # FIFO: nobody overtakes the request at the head of the line
            request.started = time.perf_counter()
            try:
                request.seq = Sequence(self.model.config, request.prompt, request.max_tokens, request.sampling,
                                       request.stop, request.arrived)
            except Exception as error:  # checked at submit, so a surprise: fail this one, keep serving
                self._waiting.popleft()
                log.exception("admission failed")
                self._finish(request, Failed(time.perf_counter(), f"the engine could not start this request: {error}"))
                continue
            taken = {r.seat for r in self._running}
            request.seat = next(seat for seat in range(1, len(taken) + 2) if seat not in taken)
            self._running.append(request)  # on the bus before it leaves the line: never seen in neither
            self._waiting.popleft()
            self._kv_reserved += request.kv_need
            admitted.append(request)
        if admitted:
            self._announce_positions()
        return admitted

    def _overdue(self, now: float) -> list[Request]:
        """Requests past their time limit; waiting ones leave the line here."""
        late = [r for r in self._running if now - r.arrived > self.limits.timeout_s]
        with self._wakeup:
            waited_out = [r for r in self._waiting if now - r.arrived > self.limits.timeout_s]
            for request in waited_out:
                self._waiting.remove(request)
            if waited_out:
                self._announce_positions()
        return late + waited_out

    def _plan(self) -> list[tuple[Request, list[int]]]:
        """This step's rows: one token for each request typing, then prompt
        chunks in arrival order within the step's token budget."""
        typing = [r for r in self._running if not r.seq.prefilling]
        plan = [(r, r.seq.next_tokens(1)) for r in typing]
        budget = self.limits.step_tokens - len(typing) if typing else self.limits.idle_chunk
        for r in self._running:
            if r.seq.prefilling and budget > 0:
                tokens = r.seq.next_tokens(budget)
                plan.append((r, tokens))
                budget -= len(tokens)
        return plan

    def _step(self):
        now = time.perf_counter()
        for request in [r for r in self._running if r.cancelled]:
            self._retire(request, Done(now, "cancelled", None))
        for request in self._overdue(now):
            self._retire(request, Failed(now, f"stopped: the request ran longer than {self.limits.timeout_s:g} s"))
        if not self._running:
            return
        plan = self._plan()
        owner = {id(r.seq): r for r, _ in plan}
        typed = sum(1 for r, tokens in plan if r.seq.makes_token(tokens))  # tokens this step makes
        floor = None  # the step's Floor, made at its first token
        try:
            for seq, event in step(self.model, [(r.seq, tokens) for r, tokens in plan]):
                request = owner[id(seq)]
                if request.cancelled:
                    continue  # nothing more after a cancel; retired at the next step boundary
                if isinstance(event, Token):
                    if floor is None:
                        self.tokens_made += typed
                        floor = Floor(len(plan), tuple(sorted(r.seat for r, _ in plan)), 0, self.tokens_made,
                                      self.kv_bytes)
                    event = replace(event, floor=replace(floor, seat=request.seat))
                if isinstance(event, Done):
                    self._retire(request, event)
                else:
                    self._deliver(request, event)
        except Exception as error:  # a failed step fails its riders, not the factory
            log.exception("engine step failed")
            message = f"the engine failed on this request: {error}"
            for request, _ in plan:
                if request in self._running:
                    self._retire(request, Failed(time.perf_counter(), message))

    def _retire(self, request: Request, event: Done | Failed):
        """A running request is over: free its cache and announce its end."""
        if request.seq is not None:
            request.seq.free()  # before it leaves the bus: a factory seen empty holds no cache
        if request in self._running:
            self._running.remove(request)
            self._kv_reserved -= request.kv_need
        self._finish(request, event)

    def _deliver(self, request: Request, event):
        """Hand an event to the request's reader without ever blocking the engine:
        a reader whose buffer is full has stopped reading and is dropped, with
        one Failed event saying so in place of what it did not read."""
        if request.dropped:
            return
        try:
            request.events.put_nowait(event)
        except queue.Full:
            request.dropped = True
            request._cancelled.set()  # retired at the next step boundary
            while not request.events.empty():
                request.events.get_nowait()
            request.events.put_nowait(Failed(time.perf_counter(), f"dropped: {self.limits.event_buffer} events "
                                                                   "went unread (the client stopped reading)"))

    def _finish(self, request: Request, event: Done | Failed):
        try:
            self.on_finish(request, event)
        except Exception:
            log.exception("on_finish failed")  # bookkeeping must never lose the answer's end
        self._deliver(request, event)
