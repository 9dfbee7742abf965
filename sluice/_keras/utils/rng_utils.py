"""`set_random_seed` and `get_random_seed` (`sl.utils`): one seed for Python, NumPy and the
graphs models build."""

from __future__ import annotations

import random

import numpy as np

from sluice._export import export
from sluice.framework.ir import graph as graph_lib

_seed: int | None = None
_times_set = 0  # how many times set_random_seed ran: Keras's global SeedGenerator is made anew


@export("utils.set_random_seed")
def set_random_seed(seed: int) -> None:
    """Seeds Python's `random`, NumPy's global generator and sluice's graph-level seed.

    The graph seed is set on the default graph and remembered for the graphs that models create
    afterwards (a `Sequential` builds its own graph), so weight initialisation, dropout and
    `fit`'s shuffling repeat exactly when a script runs again.

    Args:
      seed: a non-negative int.
    """
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"The seed must be a non-negative int, got {seed!r}.")
    global _seed, _times_set
    _seed = int(seed)
    _times_set += 1
    random.seed(_seed)
    np.random.seed(_seed % 2**32)
    graph_lib.get_default_graph().seed = _seed


def times_set() -> int:
    """How many times `set_random_seed` has run (`sl.random`'s global SeedGenerator, behind
    `seed=None`, is made again after each, as Keras resets its own)."""
    return _times_set


@export("utils.get_random_seed")
def get_random_seed() -> int | None:
    """The seed given to `set_random_seed`, or None."""
    return _seed
