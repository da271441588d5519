"""Memory the engine takes from, and hands back to, the operating system.

`reserve_array`: room for a whole request's KV cache as address space only.
A request's cache is reserved once, for its prompt plus its longest answer,
so it never grows by copying while everyone's step waits (a 1,024 + 1,024
token answer used to stall 5 times for 260-340 ms, copying into fresh
memory). The pages are private, anonymous and taken on first write, so what
is resident follows the positions actually written (a page is 16 positions
of one head), not the reservation. Huge pages are declined for it: NumPy
asks for them on big arrays, and a 2 MiB page spans several heads' rows, so
the first positions written make most of the reservation resident (measured:
a 4,096-position reservation holding 300 positions was 284 MiB resident, not
21; a 1,088-position cache's first 16-token chunk took 111 ms, with small
pages 0.4 ms and 0.36 ms for each later chunk). Reading the cache through
small pages costs about 2% of a decode step (0.3-0.4 ms at 256-2,000
positions, measured side by side). The mapping goes back to the system the
moment its array is dropped.

`release_free_memory`: glibc's malloc keeps blocks it has freed in its heap
for reuse, so after a crowd leaves, what its steps allocated there stays
resident (measured when KV caches still came from malloc: 374 MB idle, 510 MB
after two batches of 16 x 200-token answers, 387 MB after `malloc_trim`,
which took 7 ms). The caches have mappings of their own now; the work arrays
and events of a crowd's steps still come from the heap. The scheduler calls
it when the factory falls idle, so nobody waits for it. On a C library
without malloc_trim it does nothing.
"""

import ctypes
import mmap

import numpy as np


def reserve_array(shape) -> np.ndarray:
    """An uninitialised float32 array whose pages are taken as they are first
    written; plain np.empty where the platform has no private anonymous maps."""
    nbytes = int(np.prod(shape)) * 4
    if nbytes == 0:  # a freed or empty cache: nothing to map
        return np.empty(shape, dtype=np.float32)
    try:
        mapping = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)
    except (AttributeError, TypeError):  # no private maps here (Windows' mmap takes no flags)
        return np.empty(shape, dtype=np.float32)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        mapping.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(mapping, dtype=np.float32).reshape(shape)


def _malloc_trim():
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: trim(0)


release_free_memory = _malloc_trim()
