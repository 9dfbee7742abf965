"""`sl.utils`: Keras's utilities: `set_random_seed`, `to_categorical`, `pad_sequences`,
`plot_model` (with `model_to_dot`).

>>> sl.utils.set_random_seed(42)      # Python, NumPy, and the graph seed of new models
>>> first = np.random.rand(3)
>>> sl.utils.set_random_seed(42)
>>> bool(np.all(np.random.rand(3) == first))
True
>>> sl.utils.to_categorical([2, 0], num_classes=3)
array([[0., 0., 1.],
       [1., 0., 0.]], dtype=float32)
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from sluice.framework.ir import graph as graph_lib
from sluice.utils.model_plot import model_to_dot, model_to_dot_source, plot_model

__all__ = [
    "get_random_seed", "model_to_dot", "model_to_dot_source", "pad_sequences", "plot_model",
    "set_random_seed", "to_categorical",
]  # fmt: skip

_seed: int | None = None


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
    global _seed
    _seed = int(seed)
    random.seed(_seed)
    np.random.seed(_seed % 2**32)
    graph_lib.get_default_graph().seed = _seed


def get_random_seed() -> int | None:
    """The seed given to `set_random_seed`, or None."""
    return _seed


def to_categorical(x: Any, num_classes: int | None = None) -> np.ndarray:
    """One-hot float32 rows for integer class ids: shape x.shape + (num_classes,) (a trailing
    axis of 1 in `x` is dropped first, as Keras does)."""
    x = np.asarray(x, dtype="int64")
    if x.ndim > 1 and x.shape[-1] == 1:
        x = x.reshape(x.shape[:-1])
    if num_classes is None:
        num_classes = int(x.max()) + 1 if x.size else 0
    out = np.zeros(x.shape + (num_classes,), dtype="float32")
    np.put_along_axis(out, x[..., None], 1.0, axis=-1)
    return out


def pad_sequences(
    sequences: Any,
    maxlen: int | None = None,
    dtype: Any = "int32",
    padding: str = "pre",
    truncating: str = "pre",
    value: Any = 0.0,
) -> np.ndarray:
    """Keras's `pad_sequences`: a list of sequences as one array [len(sequences), maxlen, ...].

    Sequences longer than `maxlen` lose their start ("pre") or end ("post"); shorter ones are
    filled with `value` before ("pre") or after ("post"). `maxlen` None: the longest length.
    Every element of a sequence must have the shape of the first non-empty one's.

    >>> pad_sequences([[1, 2, 3], [4]], maxlen=2)
    array([[2, 3],
           [0, 4]], dtype=int32)
    >>> pad_sequences([[1], [2, 3]], padding="post", value=-1)
    array([[ 1, -1],
           [ 2,  3]], dtype=int32)

    Raises:
      ValueError: padding or truncating not "pre"/"post", a negative maxlen, an element that is
        not a sequence, or elements of different shapes.
    """
    for name, given in (("padding", padding), ("truncating", truncating)):
        if given not in ("pre", "post"):
            raise ValueError(f"pad_sequences: {name} must be 'pre' or 'post', got {given!r}.")
    if maxlen is not None and maxlen < 0:
        raise ValueError(f"pad_sequences: maxlen must be None or >= 0, got {maxlen}.")
    items = [np.asarray(s) for s in sequences]
    for i, s in enumerate(items):
        if s.ndim == 0:
            raise ValueError(f"pad_sequences: sequences[{i}] is {s!r}, not a sequence.")
    sample_shape = next((s.shape[1:] for s in items if len(s)), ())
    if maxlen is None:
        maxlen = max((len(s) for s in items), default=0)
    out = np.full((len(items), maxlen) + tuple(sample_shape), value, dtype=dtype)
    for i, s in enumerate(items):
        if not len(s) or not maxlen:
            continue
        if s.shape[1:] != sample_shape:
            raise ValueError(
                f"pad_sequences: sequences[{i}] has elements of shape {s.shape[1:]}, "
                f"the others {sample_shape}."
            )
        kept = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        if padding == "pre":
            out[i, maxlen - len(kept) :] = kept
        else:
            out[i, : len(kept)] = kept
    return out
