"""Timing an engine elsewhere: the factory as a client of any OpenAI-compatible
server (vLLM, SGLang, llama.cpp's server, or another Word Factory).

An operator points the app at it by configuration (WF_REMOTE_BASE_URL, never
a visitor's input). `RemoteEngine` then stands where the scheduler stands:
`submit` returns a request whose `events` the web edge relays as usual, built
from what can be seen from outside -- each streamed chunk's arrival, its text
and the server's usage count. The remote tokenizer, its prefill and its KV
cache cannot be seen: those events are simply absent, and the page says so.
"""

import logging
import queue
import threading
import time
from dataclasses import dataclass

import openai

from engine.errors import ParamError
from engine.events import Done, Failed, Token, Tokenized
from engine.sampling import GREEDY, SamplingParams
from engine.scheduler import EngineStopped, QueueFull
from engine.stopwatch import summarize

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Notice:
    """Something the visitor should know about this run's figures."""

    t: float
    message: str


class RemoteRequest:
    """The remote counterpart of engine.scheduler.Request."""

    def __init__(self, prompt: str, max_tokens: int, sampling: SamplingParams, stop: tuple[str, ...],
                 arrived: float):
        self.prompt, self.max_tokens, self.sampling, self.stop = prompt, max_tokens, sampling, stop
        self.arrived = arrived
        self.started: float | None = None
        self.prompt_tokens = 0  # from the server's usage count
        self.token_times: list[float] = []
        self.events: queue.Queue = queue.Queue()
        self._cancelled = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def cancel(self):
        self._cancelled.set()


class RemoteEngine:
    """One thread per request in flight, at most `max_running` at once."""

    def __init__(self, base_url: str, model: str, api_key: str = "EMPTY", max_running: int = 16,
                 timeout_s: float = 600.0, on_finish=None):
        self.model_name = model
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout_s)
        self.max_running = max_running
        self.on_finish = on_finish or (lambda request, event: None)
        self._running = 0
        self._lock = threading.Lock()
        self._closed = False

    alive = property(lambda self: not self._closed)
    running = property(lambda self: self._running)
    waiting = 0  # the remote engine's own line cannot be seen from here
    kv_bytes = 0  # nor its KV cache

    def submit(self, prompt: str, max_tokens: int, sampling: SamplingParams = GREEDY,
               arrived: float | None = None, stop: tuple[str, ...] = ()) -> RemoteRequest:
        if not isinstance(prompt, str) or prompt == "":
            raise ParamError("prompt", "prompt must be a non-empty string")
        arrived = time.perf_counter() if arrived is None else arrived
        request = RemoteRequest(prompt, max_tokens, sampling, stop, arrived)
        with self._lock:
            if self._closed:
                raise EngineStopped("the factory is shutting down")
            if self._running >= self.max_running:
                raise QueueFull(f"{self._running} requests are already in flight to the remote engine")
            self._running += 1
        threading.Thread(target=self._serve, args=(request,), name="remote-request", daemon=True).start()
        return request

    def close(self, timeout: float | None = None):
        self._closed = True

    def _serve(self, request: RemoteRequest):
        request.started = time.perf_counter()
        try:
            last = self._stream(request)
        except openai.OpenAIError as e:
            last = Failed(time.perf_counter(), f"the remote engine answered with an error: {e}")
        except Exception as e:  # a broken remote must not take the factory down
            log.exception("remote request failed")
            last = Failed(time.perf_counter(), f"the remote engine could not be timed: {e}")
        finally:
            with self._lock:
                self._running -= 1
        try:
            self.on_finish(request, last)
        except Exception:
            log.exception("on_finish failed")
        request.events.put(last)

    def _stream(self, request: RemoteRequest) -> Done | Failed:
        """Relay the remote stream as events; returns the closing one."""
        sampling = request.sampling
        extra = {"top_k": sampling.top_k} if sampling.top_k is not None else {}
        request.events.put(Tokenized(time.perf_counter(), [], []))  # sent, its tokens unseen
        stream = self.client.completions.create(
            model=self.model_name, prompt=request.prompt, max_tokens=request.max_tokens,
            temperature=sampling.temperature, seed=sampling.seed, stop=list(request.stop) or None, stream=True,
            stream_options={"include_usage": True}, extra_body=extra)
        finish_reason, usage = None, None
        with stream:
            for chunk in stream:
                if request.cancelled:
                    return Done(time.perf_counter(), "cancelled", None)
                if chunk.usage:
                    usage = chunk.usage
                if not chunk.choices:
                    continue
                t = time.perf_counter()
                request.token_times.append(t)
                choice = chunk.choices[0]
                finish_reason = choice.finish_reason or finish_reason
                request.events.put(Token(t, len(request.token_times) - 1, None, choice.text or "", None,
                                         choice.finish_reason))
        if not request.token_times:
            return Failed(time.perf_counter(), "the remote engine sent no tokens")
        request.prompt_tokens = usage.prompt_tokens if usage else 0
        if usage is None or usage.completion_tokens != len(request.token_times):
            counted = "no usage count" if usage is None else f"{usage.completion_tokens} tokens"
            request.events.put(Notice(time.perf_counter(), f"{len(request.token_times)} chunks arrived but the "
                                      f"server reported {counted}: the gaps are between chunks, not tokens"))
        first = request.token_times[0]
        stats = summarize(request.arrived, request.arrived, request.arrived, first, request.token_times,
                          max(request.prompt_tokens, 1))
        return Done(time.perf_counter(), finish_reason or "length", stats)
