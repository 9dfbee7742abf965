"""`Discretization`: the bin of each value, from boundaries given or learned by `adapt`
(Keras 3's `keras/src/layers/preprocessing/discretization.py`).

`adapt` keeps Keras's approximate quantile summary: a sorted list of (value, weight) points.
A batch is summarised by every `step`-th of its sorted values (step = max(n * epsilon, 1),
starting at step - 1), each weighing `step`; summaries are merged by sorting their points
together and compressed to about 1 / epsilon points by interpolating the values at the
cumulative-weight fractions epsilon, 2 epsilon, ..., 1. The boundaries are the summary
compressed to `num_bins` points, less the last.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.preprocessing import adapt_data, encoding
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops


def summarize(values: np.ndarray, epsilon: float) -> np.ndarray:
    """The summary [values; weights] of one batch (see the module docstring)."""
    values = np.sort(np.reshape(values, [-1]))
    step = max(values.size * epsilon, 1)
    points = values[int(step - 1) :: int(step)]
    return np.stack([points, np.full_like(points, step)])


def compress(summary: np.ndarray, epsilon: float) -> np.ndarray:
    """`summary` resampled at the cumulative-weight fractions epsilon, 2 epsilon, ..., 1 (left
    as it is when it has fewer than 1 / epsilon points)."""
    if summary.shape[1] * epsilon < 1:
        return summary
    fractions = epsilon + np.arange(0.0, 1.0, epsilon)
    cumulative = np.cumsum(summary[1])
    where = cumulative / cumulative[-1]
    values = np.interp(fractions, where, summary[0])
    weights = np.diff(np.interp(fractions, where, cumulative), prepend=0.0)
    return np.stack([values, weights]).astype(np.float32)


def merge(a: np.ndarray, b: np.ndarray, epsilon: float) -> np.ndarray:
    both = np.concatenate([a, b], axis=1)
    return compress(both[:, np.argsort(both[0], kind="stable")], epsilon)


@export("layers.Discretization")
class Discretization(Layer):
    """Places each value in one of the contiguous bins `(-inf, b0), [b0, b1), ...,
    [b_last, inf)` and outputs its index (`output_mode="int"`, int32) or an encoding of it
    ("one_hot", "multi_hot", "count"; see `encoding`).

    Args:
      bin_boundaries: the sorted boundaries; then `adapt` is not used.
      num_bins: the number of bins `adapt` learns (approximate quantiles).
      epsilon: the error tolerance of the quantile summary.
      output_mode: "int", "one_hot", "multi_hot" or "count".
      sparse: must be False (sluice has no sparse outputs).

    >>> layer = sl.layers.Discretization(bin_boundaries=[0.0, 1.0, 2.0])
    >>> np.asarray(layer(np.array([[-1.5, 1.0, 3.4, 0.5], [0.0, 3.0, 1.3, 0.0]]))).tolist()
    [[0, 2, 3, 1], [1, 3, 2, 1]]
    """

    def __init__(
        self,
        bin_boundaries: Any = None,
        num_bins: int | None = None,
        epsilon: float = 0.01,
        output_mode: str = "int",
        sparse: bool = False,
        dtype: Any = None,
        name: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(dtype=dtype, name=name, **kwargs)
        if sparse:
            raise ValueError("Discretization: `sparse=True` is not supported (no sparse tensors).")
        encoding.check_output_mode("Discretization", output_mode)
        if num_bins is not None and num_bins < 0:
            raise ValueError(
                f"`num_bins` must be greater than or equal to 0. Received: `num_bins={num_bins}`"
            )
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError(
                "Both `num_bins` and `bin_boundaries` should not be set. Received: "
                f"`num_bins={num_bins}` and `bin_boundaries={bin_boundaries}`"
            )
        if num_bins is None and bin_boundaries is None:
            raise ValueError("You need to set either `num_bins` or `bin_boundaries`.")
        self.bin_boundaries = None if bin_boundaries is None else list(bin_boundaries)
        self.num_bins = num_bins
        self.epsilon = epsilon
        self.output_mode = output_mode
        self.sparse = sparse
        self.summary = None if bin_boundaries else np.zeros((2, 0), np.float32)

    def adapt(self, data: Any, steps: int | None = None) -> None:
        """Learns `num_bins` - 1 boundaries from the approximate quantiles of `data` (an array,
        a `sl.data` dataset of batches, a `PyDataset` or an iterable of batches)."""
        if self.num_bins is None:
            raise ValueError(
                "Cannot adapt a Discretization layer that has been initialized with "
                "`bin_boundaries`, use `num_bins` instead."
            )
        self.summary = np.zeros((2, 0), np.float32)
        for batch in adapt_data.batches(data, steps, f"{self.name}.adapt"):
            batch_summary = summarize(np.asarray(batch, np.float32), self.epsilon)
            self.summary = merge(batch_summary, self.summary, self.epsilon)
        self.bin_boundaries = compress(self.summary, 1.0 / self.num_bins)[0, :-1].tolist()

    @property
    def _depth(self) -> int:
        return len(self.bin_boundaries) + 1 if self.bin_boundaries is not None else self.num_bins

    def call(self, inputs: Any) -> Any:
        if self.bin_boundaries is None:
            raise ValueError(
                "You need to either pass the `bin_boundaries` argument at construction time or "
                "call `adapt(dataset)` before you can start using the `Discretization` layer."
            )
        x = core_ops.convert_to_tensor(inputs)
        if not dtypes.is_floating(x.dtype):
            x = fill_ops.cast(x, dtypes.float32)
        boundaries = core_ops.constant(np.asarray(self.bin_boundaries, x.dtype))
        # np.digitize with increasing bins: the number of boundaries <= x
        above = math_ops.greater_equal(array_ops.expand_dims(x, -1), boundaries)
        indices = reduction_ops.reduce_sum(fill_ops.cast(above, dtypes.int32), -1)
        dtype = dtypes.int32 if self.output_mode == "int" else self._dtype
        return encoding.encode_categorical_inputs(indices, self.output_mode, self._depth, dtype)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return encoding.encoded_shape(input_shape, self.output_mode, self._depth)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "bin_boundaries": self.bin_boundaries,
            "num_bins": self.num_bins,
            "epsilon": self.epsilon,
            "output_mode": self.output_mode,
            "sparse": self.sparse,
        }

    @classmethod
    def from_config(cls, config: dict) -> Discretization:
        """An adapted layer's config holds both its boundaries and `num_bins` (Keras's rule)."""
        config = dict(config)
        if config.get("bin_boundaries") is not None and config.get("num_bins") is not None:
            boundaries = config.pop("bin_boundaries")
            layer = cls(**config)
            layer.bin_boundaries = boundaries
            return layer
        return cls(**config)
