"""`SeedStream`: what a random op draws from when its `seed` is not TF1's int or None.

TF1's random ops (`random_normal`, `random_uniform`, ...) are stateful: each run of the op gives
new numbers, from a per-op counter and the `(seed, seed2)` that `get_seed` derives. Keras 3's
random functions are stateless instead: a draw is a pure function of a seed tensor of two ints,
which a `keras.random.SeedGenerator` hands out and advances. The functions `sl.random.normal`,
`uniform`, `truncated_normal`, `shuffle`, `gamma` and `categorical` serve both: given a
`SeedStream` as `seed`, they build the stateless op of the same distribution on
`seed.next()`; given an int or None, TF1's op.

A stream also decides where a draw is made (`draw`): the functions above hand it the building
of the draw (`keyed_by_stream`). Keras's streams build graph ops inside a trace and compute the
value at once outside one, as Keras's eager draws do.

A stream lives above the framework (Keras's SeedGenerator, `sluice/_keras/random.py`); this base
class is all the framework knows of it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from sluice.framework.ir.graph import Tensor


class SeedStream:
    """A source of seeds for stateless draws: subclasses implement `next`."""

    def next(self, ordered: bool = True) -> Tensor:
        """The seed of the next draw: an int32 tensor of shape [2] in the default graph.

        Args:
          ordered: Keras's argument: True advances the stream by one step (draws in order);
            False scrambles the state instead (Keras's global generator).
        """
        raise NotImplementedError

    def draw(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        """`fn(*args, **kwargs)`, a random function drawing from this stream, made where the
        stream says (by default: graph ops in the default graph)."""
        return fn(*args, **kwargs)


def keyed_by_stream(fn: Callable) -> Callable:
    """Decorator for a random function with a `seed` argument: given a `SeedStream` as `seed`,
    the stream's `draw` makes the draw (see the module docstring); else `fn` as it is."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        seed = signature.bind_partial(*args, **kwargs).arguments.get("seed")
        if isinstance(seed, SeedStream):
            return seed.draw(fn, args, kwargs)
        return fn(*args, **kwargs)

    return wrapper


def is_seed_stream(seed: Any) -> bool:
    return isinstance(seed, SeedStream)
