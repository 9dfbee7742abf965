"""`to_categorical` (`sl.utils`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export


@export("utils.to_categorical")
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
