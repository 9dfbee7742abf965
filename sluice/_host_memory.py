"""How the process's C allocator hands memory to XLA:CPU, set when sluice is imported.

XLA:CPU allocates the temporary memory of a compiled step, one block for all of its buffers,
at every run and frees it afterwards. For an LSTM step that block is large (88 MB for
shared/WORKLOADS.md's W2: the values the forward loop saves for the backward one). glibc's
malloc serves a block that large with a fresh `mmap` and returns it with `munmap` when it is
freed (always so from a thread's own arena, where XLA's threads allocate), so every step
faulted in and zeroed 21,000 fresh pages, about a fifth of W2's step time on a 2-core machine.

Tuned here, glibc keeps that memory: one arena for all threads (`M_ARENA_MAX`), no `mmap` for
large blocks (`M_MMAP_MAX`), and no returning the top of the heap to the system
(`M_TRIM_THRESHOLD`). A step then reuses the block the previous step freed, as PyTorch's and
TensorFlow's allocators reuse theirs. The cost: the process keeps the most memory it ever held
(freed blocks are reused, not given back), and threads share one allocator lock.

Only where the C library is glibc; `SLUICE_HOST_MALLOC=system` leaves the allocator as it is.
It takes full effect when sluice is imported before JAX starts its CPU backend (threads made
earlier keep the arenas they have).
"""

from __future__ import annotations

import ctypes
import os

# mallopt's parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8

tuned = False  # whether `tune` changed the allocator in this process


def tune() -> bool:
    """Sets glibc's malloc to keep and reuse large blocks; True where it did."""
    global tuned
    if tuned or os.environ.get("SLUICE_HOST_MALLOC", "") == "system":
        return tuned
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 (glibc only: musl and macOS have no such arenas)
    except (OSError, AttributeError):
        return False
    settings = ((_M_ARENA_MAX, 1), (_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, 2**31 - 1))
    tuned = all(libc.mallopt(param, value) == 1 for param, value in settings)
    return tuned
