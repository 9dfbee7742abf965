"""The random state of a session: one execution counter per random op.

Both engines derive the key of one execution of a random op from its seeds and its counter, so
they draw the same numbers, and saving the counters saves the random state.
"""

from __future__ import annotations

from typing import Any

import jax


@jax.jit
def derive_key(seed: Any, seed2: Any, count: Any) -> Any:
    """The PRNG key for execution number `count` of the op seeded (seed, seed2)."""
    key = jax.random.fold_in(jax.random.key(seed), seed2)
    return jax.random.fold_in(key, count)
