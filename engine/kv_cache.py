"""The notebook above the Reader: one request's keys and values, every layer.

Memory follows use: a request holding 300 tokens holds about 300 x 72 KiB,
not 4,096 positions' worth. A Sequence reserves its whole request (prompt +
longest answer) at once, as address space whose pages are taken as positions
are written (engine/memory.py), so it never grows by copying mid-answer; a
caller that reserves less (a test, a benchmark) grows geometrically (at least
GROW_TOKENS, or 1/8 of the room) so the copies stay a small fraction of the
work. `free` hands the memory back the moment a request ends.
"""

from .config import ModelConfig
from .memory import reserve_array

GROW_TOKENS = 64


class KVCache:
    def __init__(self, config: ModelConfig):
        self.config = config
        self.length = 0  # positions filled, in every layer
        self._alloc(0)

    def _alloc(self, capacity: int):
        c = self.config
        shape = (c.n_layer, c.n_head, capacity, c.head_size)  # (L, H, cap, hd)
        self.k, self.v = reserve_array(shape), reserve_array(shape)

    @property
    def capacity(self) -> int:
        return self.k.shape[2]

    @property
    def bytes_used(self) -> int:
        """Bytes of the positions held: length x (K and V, every layer)."""
        return self.length * self.config.kv_bytes_per_token

    @property
    def bytes_reserved(self) -> int:
        """Address space reserved; resident is only what has been written."""
        return self.k.nbytes + self.v.nbytes

    def reserve(self, n_positions: int):
        """Make room for `n_positions` in total, keeping what is held."""
        n_ctx = self.config.n_ctx
        if n_positions > n_ctx:
            raise ValueError(f"{n_positions} positions exceed the context of {n_ctx}")
        if n_positions <= self.capacity:
            return
        grown = max(n_positions, self.capacity + max(GROW_TOKENS, self.capacity // 8))
        grown = min(n_ctx, -(-grown // GROW_TOKENS) * GROW_TOKENS)
        old_k, old_v, n = self.k, self.v, self.length
        self._alloc(grown)
        self.k[:, :, :n] = old_k[:, :, :n]
        self.v[:, :, :n] = old_v[:, :, :n]

    def free(self):
        """Release the storage; the cache is empty afterwards."""
        self.length = 0
        self._alloc(0)
