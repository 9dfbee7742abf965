"""`pad_sequences` (`sl.utils`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export


@export("utils.pad_sequences")
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
