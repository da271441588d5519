"""Picking the next token from the logits: greedy, or temperature and top-k.

`sample` is a small pure function: all randomness comes from the RNG the
caller passes, so a seed reproduces a run exactly. Temperature 0 means argmax
and needs no RNG.
"""

import math
from dataclasses import dataclass

import numpy as np

from .errors import ParamError


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.0  # 0: greedy (argmax)
    top_k: int | None = None  # keep only the k most likely tokens; None: all
    seed: int | None = None  # None with temperature > 0: fresh entropy, not reproducible

    def __post_init__(self):
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise ParamError("temperature", f"temperature must be a finite number >= 0, got {t!r}")
        k = self.top_k
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ParamError("top_k", f"top_k must be a whole number >= 1 (or omitted), got {k!r}")
        s = self.seed
        if s is not None and (isinstance(s, bool) or not isinstance(s, int) or s < 0):
            raise ParamError("seed", f"seed must be a whole number >= 0 (or omitted), got {s!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def rng(self) -> np.random.Generator | None:
        return None if self.greedy else np.random.default_rng(self.seed)


GREEDY = SamplingParams()


def sample(logits: np.ndarray, params: SamplingParams = GREEDY, rng: np.random.Generator | None = None) -> int:
    """The next token id drawn from `logits` (V,) under `params`."""
    if params.greedy:
        return int(np.argmax(logits))
    assert rng is not None, "sampling with temperature > 0 needs an RNG"
    z = logits / np.float32(params.temperature)
    if params.top_k is not None and params.top_k < z.size:
        kth = np.partition(z, -params.top_k)[-params.top_k]
        z[z < kth] = -np.inf
    p = np.exp(z - z.max())
    cdf = np.cumsum(p, dtype=np.float64)  # off the hot path: 256 numbers
    return int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
