"""The slow, obviously-correct forward pass the engine is checked against.

No cache, no blocks, no scratch buffers, no in-place tricks: the whole
sequence every time, one head at a time, with an explicit causal mask --
written to be read against the GPT-2 diagram, not to be fast.
"""

import numpy as np


def layer_norm(x, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def forward(model, ids):
    """Logits (T, V) for every position of `ids`, computed from scratch in float64."""
    c = model.config
    H, hd = c.n_head, c.head_size
    T = len(ids)
    f64 = lambda a: a.astype(np.float64)  # noqa: E731 -- the oracle works in double precision
    x = f64(model.wte)[ids] + f64(model.wpe)[:T]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    for b in model.blocks:
        q, k, v = np.split(layer_norm(x, c.ln_eps) @ f64(b.w_qkv).T, 3, axis=1)
        heads = []
        for h in range(H):
            cols = slice(h * hd, (h + 1) * hd)
            scores = q[:, cols] @ k[:, cols].T / np.sqrt(hd)
            scores[future] = -np.inf
            heads.append(softmax(scores) @ v[:, cols])
        x = x + np.concatenate(heads, axis=1) @ f64(b.w_o).T
        x = x + gelu(layer_norm(x, c.ln_eps) @ f64(b.w_fc).T) @ f64(b.w_proj).T
    return layer_norm(x, c.ln_eps) @ f64(model.wte).T
