"""The decoder: GPT-2's shape with seeded random weights, in float32 NumPy.

`forward` takes only the new tokens and a KV cache, so one function serves
the Reader (prefill: the whole prompt in one pass) and the Typewriter (decode:
one token per step). It returns the logits of the last new position; only
that position goes through the LM head, since nothing else is sampled.

Everything stays float32: under NumPy 2 one float64 scalar silently promotes
an activation to float64 and every later matmul converts its weights, about
5x slower. So every constant below is an np.float32 or a Python float (which
NumPy treats as "weak" and does not promote with).

This module knows nothing about text, sampling or time.
"""

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .config import ModelConfig
from .kv_cache import KVCache

ATTN_BLOCK = 128  # queries per block in causal attention: bounds the scores held at once
FEW_ROWS = 64  # up to this many rows, `linear` multiplies weight by columns
GELU_C = np.float32(np.sqrt(2.0 / np.pi))
GELU_C3 = np.float32(np.sqrt(2.0 / np.pi) * 0.044715)


@dataclass
class Block:
    """One layer's weights, each stored (out, in): see `linear`."""

    w_qkv: np.ndarray  # (3C, C): queries, keys, values one after the other
    w_o: np.ndarray  # (C, C)
    w_fc: np.ndarray  # (M, C)
    w_proj: np.ndarray  # (C, M)

    def matrices(self):
        return (self.w_qkv, self.w_o, self.w_fc, self.w_proj)


class Model:
    def __init__(self, config: ModelConfig):
        self.config = config
        rng = np.random.default_rng(config.seed)
        std = np.float32(config.init_std)

        def normal(*shape):
            w = rng.standard_normal(shape, dtype=np.float32)  # drawn in float32: no 2x temporary
            w *= std
            return w

        C, M = config.n_embd, config.n_mlp
        self.wte = normal(config.vocab_size, C)  # token embedding, tied to the LM head
        self.wpe = normal(config.n_ctx, C)  # learned position embedding
        # each weight (out, in), the way `linear` multiplies it
        self.blocks = [Block(normal(3 * C, C), normal(C, C), normal(M, C), normal(C, M)) for _ in range(config.n_layer)]
        self.q_scale = np.float32(1.0 / np.sqrt(config.head_size))
        self.scratch = Scratch()

    @property
    def weight_bytes(self) -> int:
        return self.wte.nbytes + self.wpe.nbytes + sum(w.nbytes for b in self.blocks for w in b.matrices())

    def forward(self, ids, cache: KVCache, all_logits: bool = False) -> np.ndarray:
        """Run the new tokens `ids` through the model, appending them to `cache`.

        Returns the logits (V,) of the last new position, or (T, V) for every
        new position when `all_logits` is set (the tests' oracle comparison).
        """
        return run_to_end(self.forward_steps([(ids, cache)], all_logits))[0]

    def forward_steps(self, segments, all_logits: bool = False):
        """One step for several sequences at once, as a generator.

        `segments` is a list of (new token ids, that sequence's KV cache): a
        decode step is one token, a prefill chunk many. All their rows go
        through each weight matrix in ONE matrix product -- the bus carrying
        everyone -- while attention runs per sequence over its own cache.
        Yields the number of layers done after each block (so a long prefill
        can report progress); returns one logits array per segment: (V,) for
        its last position, or (T, V) for all with `all_logits`. Abandoned
        midway, the caches keep their lengths.
        """
        c, s = self.config, self.scratch
        H, hd, C, M = c.n_head, c.head_size, c.n_embd, c.n_mlp
        lengths = [len(ids) for ids, _ in segments]
        starts = [cache.length for _, cache in segments]  # positions already cached, per sequence
        assert min(lengths) >= 1, "every segment needs at least one new token"
        N = sum(lengths)  # rows in this step
        for (_, cache), T, P in zip(segments, lengths, starts):
            cache.reserve(P + T)
        ids = np.concatenate([np.asarray(ids, dtype=np.intp) for ids, _ in segments])
        positions = np.concatenate([np.arange(P, P + T) for P, T in zip(starts, lengths)])

        x = np.add(self.wte[ids], self.wpe[positions], out=s.array("x", (N, C)))  # residual stream
        normed, proj = s.array("normed", (N, C)), s.array("proj", (N, C))
        qkv, hidden = s.array("qkv", (N, 3 * C)), s.array("hidden", (N, M))
        att = s.array("att", (N, H, hd))
        for layer, block in enumerate(self.blocks):
            linear(layer_norm(x, c.ln_eps, out=normed), block.w_qkv, qkv, s)
            qkv[:, :C] *= self.q_scale
            q, k, v = qkv.reshape(N, 3, H, hd).transpose(1, 2, 0, 3)  # each (H, N, hd)
            row = 0
            for (_, cache), T, P in zip(segments, lengths, starts):
                rows = slice(row, row + T)
                cache.k[layer, :, P : P + T] = k[:, rows]
                cache.v[layer, :, P : P + T] = v[:, rows]
                attention(q[:, rows], cache.k[layer, :, : P + T], cache.v[layer, :, : P + T], P, s, att[rows])
                row += T
            x += linear(att.reshape(N, C), block.w_o, proj, s)
            linear(layer_norm(x, c.ln_eps, out=normed), block.w_fc, hidden, s)
            x += linear(gelu_(hidden, s.array("gelu", (N, M))), block.w_proj, proj, s)
            yield layer + 1
        for (_, cache), T, P in zip(segments, lengths, starts):
            cache.length = P + T

        if all_logits:
            assert len(segments) == 1, "all_logits is for one sequence"
            return [layer_norm(x, c.ln_eps, out=normed) @ self.wte.T]  # (T, V)
        last = np.cumsum(lengths) - 1  # only each sequence's last position is sampled
        logits = layer_norm(x[last], c.ln_eps, out=normed[: len(last)]) @ self.wte.T  # (B, V)
        return list(logits)


def run_to_end(steps):
    """Drive a forward_steps generator to its end; its return value."""
    while True:
        try:
            next(steps)
        except StopIteration as finished:
            return finished.value


class Scratch:
    """Named float32 work arrays, reused from one forward call to the next.

    A fresh multi-megabyte array costs a page fault per 4 KiB page on first
    touch, which made GELU 7x slower than the arithmetic itself; reusing the
    buffers removes that. The buffers grow to the largest call seen, so the
    caller bounds them by bounding the tokens per call (prefill chunks).
    Not thread-safe: one engine thread owns the model.
    """

    def __init__(self):
        self._buffers = {}

    def array(self, name: str, shape) -> np.ndarray:
        n = math.prod(shape)
        buf = self._buffers.get(name)
        if buf is None or buf.size < n:
            buf = self._buffers[name] = np.empty(n, dtype=np.float32)
        return buf[:n].reshape(shape)


def linear(x: np.ndarray, w: np.ndarray, out: np.ndarray, scratch: Scratch) -> np.ndarray:
    """x @ w.T into `out`, for rows x (N, in) and a weight stored (out, in).

    OpenBLAS multiplies a few rows through a weight far more slowly per row
    than one row or hundreds, and the way round matters: stored (out, in), a
    step of a few rows goes as w @ x^T (then turned back into rows, a copy of a
    few KB), one row as a matrix-vector product, and a prompt's hundreds of
    rows as x @ w^T. Measured side by side against x @ w with w stored
    (in, out), whole steps of GPT-2 small, four runs: one row 0 to -21%, 4
    rows -7 to -15%, 8 rows -3 to +4%, 16 rows -3 to -16%, a 256-token
    prefill +1 to +7%.
    """
    if len(x) == 1:
        np.matmul(w, x[0], out=out[0])
    elif len(x) <= FEW_ROWS:
        by_column = np.matmul(w, x.T, out=scratch.array("linear", (w.shape[0], len(x))))
        np.copyto(out, by_column.T)
    else:
        np.matmul(x, w.T, out=out)
    return out


def layer_norm(x: np.ndarray, eps: float, out: np.ndarray) -> np.ndarray:
    """LayerNorm over the last axis, without learned scale or bias, into `out`."""
    inv_c = 1.0 / x.shape[-1]
    mean = np.add.reduce(x, axis=-1, keepdims=True)  # (T, 1); cheaper than x.mean per call
    mean *= inv_c
    np.subtract(x, mean, out=out)
    var = np.einsum("tc,tc->t", out, out)[:, None]  # (T, 1)
    var *= inv_c
    var += eps
    out /= np.sqrt(var, out=var)
    return out


def gelu_(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation, in place in `x`, with `t` as scratch:
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    np.multiply(x, x, out=t)
    t *= GELU_C3
    t += GELU_C
    t *= x  # sqrt(2/pi) (x + 0.044715 x^3)
    np.tanh(t, out=t)
    t += 1.0
    x *= 0.5
    x *= t
    return x


@lru_cache(maxsize=8)
def causal_mask(n: int) -> np.ndarray:
    """(n, n) additive mask: 0 on and below the diagonal, -inf above."""
    mask = np.triu(np.full((n, n), -np.inf, dtype=np.float32), 1)
    mask.flags.writeable = False
    return mask


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, start: int, scratch: Scratch, out: np.ndarray):
    """Causal attention for T queries at positions start..start+T-1, into `out`.

    q: (H, T, hd), already scaled; k, v: (H, start+T, hd), every key so far;
    out: (T, H, hd), the layout that merges heads for free. Queries go in
    blocks of ATTN_BLOCK, each looking only at the keys up to its own last
    position, so a long prompt never holds all H x T x T scores at once and
    skips most of the masked upper half of the work.
    """
    H, T, hd = q.shape
    for i0 in range(0, T, ATTN_BLOCK):
        i1 = min(i0 + ATTN_BLOCK, T)
        n_keys = start + i1
        scores = scratch.array("scores", (H, i1 - i0, n_keys))
        np.matmul(q[:, i0:i1], k[:, :n_keys].transpose(0, 2, 1), out=scores)
        if i1 - i0 > 1:  # this block's own positions: hide each query's future
            scores[:, :, start + i0 :] += causal_mask(i1 - i0)
        # softmax, normalised after the product with V (on hd numbers, not n_keys);
        # ufunc reductions skip the .max()/.sum() wrappers, which show in decode
        scores -= np.maximum.reduce(scores, axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        denom = np.add.reduce(scores, axis=-1, keepdims=True)  # (H, b, 1)
        head_out = out[i0:i1].transpose(1, 0, 2)  # (H, b, hd) view into out
        np.matmul(scores, v[:, :n_keys], out=head_out)
        head_out /= denom
