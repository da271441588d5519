"""Prometheus metrics under vLLM's names, so existing dashboards work.

Every request counts, from the page and from the API alike: the scheduler
reports each request's end here (`observe`), and the edges report the
requests they refused (`rejected`). Gauges are read from the scheduler when
/metrics is scraped. Each app has its own registry.
"""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from engine.events import Done
from engine.scheduler import Request, Scheduler
from engine.stopwatch import gaps

# Seconds; the same buckets vLLM uses for these histograms, cut to this factory's range.
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0)
ITL_BUCKETS = (0.001, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0)
LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0)
OUTCOMES = ("finished", "cancelled", "error", "rejected")


class Metrics:
    def __init__(self, model_name: str, kv_budget_bytes: int):
        self.registry = r = CollectorRegistry()
        labels = ["model_name"]
        self.model_name = model_name
        self.kv_budget = kv_budget_bytes
        self.ttft = Histogram("vllm:time_to_first_token_seconds", "Time to first token, arrival included",
                              labels, buckets=TTFT_BUCKETS, registry=r)
        self.itl = Histogram("vllm:inter_token_latency_seconds", "Gap between consecutive tokens",
                             labels, buckets=ITL_BUCKETS, registry=r)
        self.e2e = Histogram("vllm:e2e_request_latency_seconds", "Arrival to last token",
                             labels, buckets=LATENCY_BUCKETS, registry=r)
        self.queue = Histogram("vllm:request_queue_time_seconds", "Time spent waiting in line",
                               labels, buckets=LATENCY_BUCKETS, registry=r)
        self.prompt_tokens = Counter("vllm:prompt_tokens", "Prompt tokens read", labels, registry=r)
        self.generation_tokens = Counter("vllm:generation_tokens", "Tokens generated", labels, registry=r)
        self.success = Counter("vllm:request_success", "Requests finished, by finish reason",
                               labels + ["finished_reason"], registry=r)
        self.outcomes = Counter("word_factory:requests", "Requests by outcome: finished, cancelled, error, rejected",
                                labels + ["outcome"], registry=r)
        for metric in (self.ttft, self.itl, self.e2e, self.queue, self.prompt_tokens, self.generation_tokens):
            metric.labels(model_name)  # present from the start, at 0, so rates and deltas work at once
        for outcome in OUTCOMES:
            self.outcomes.labels(model_name, outcome)
        self.running = Gauge("vllm:num_requests_running", "Requests being served", labels, registry=r)
        self.waiting = Gauge("vllm:num_requests_waiting", "Requests waiting in line", labels, registry=r)
        self.kv_usage = Gauge("vllm:kv_cache_usage_perc", "KV cache held / budget (1 = full)", labels, registry=r)

    def watch(self, scheduler: Scheduler):
        """Read the gauges from `scheduler` whenever metrics are scraped."""
        name = self.model_name
        self.running.labels(name).set_function(lambda: scheduler.running)
        self.waiting.labels(name).set_function(lambda: scheduler.waiting)
        self.kv_usage.labels(name).set_function(lambda: scheduler.kv_bytes / self.kv_budget)

    def observe(self, request: Request, event):
        """A request ended with `event` (Done or Failed)."""
        name = self.model_name
        self.prompt_tokens.labels(name).inc(request.prompt_tokens)
        self.generation_tokens.labels(name).inc(len(request.token_times))
        if request.started is not None:
            self.queue.labels(name).observe(request.started - request.arrived)
        for gap in gaps(request.token_times):
            self.itl.labels(name).observe(gap)
        if not isinstance(event, Done):
            return self.outcomes.labels(name, "error").inc()
        if event.finish_reason == "cancelled":
            return self.outcomes.labels(name, "cancelled").inc()
        self.outcomes.labels(name, "finished").inc()
        self.success.labels(name, event.finish_reason).inc()
        self.ttft.labels(name).observe(event.stats.ttft_s)
        self.e2e.labels(name).observe(event.stats.total_s)

    def rejected(self):
        """The edge refused a request before it reached the engine."""
        self.outcomes.labels(self.model_name, "rejected").inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
