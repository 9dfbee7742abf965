"""`Normalization`: `(x - mean) / sqrt(variance)` with statistics given or learned by `adapt`
(Keras 3's `keras/src/layers/preprocessing/normalization.py`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras import config
from sluice._keras.layers import runtime
from sluice._keras.layers.base import Layer
from sluice._keras.layers.preprocessing import adapt_data
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, unary_ops


@export("layers.Normalization")
class Normalization(Layer):
    """Shifts and scales inputs to mean 0 and standard deviation 1 per index of `axis`:
    `(x - mean) / max(sqrt(variance), epsilon)`, or back with `invert=True`
    (`mean + x * max(sqrt(variance), epsilon)`).

    The statistics are given (`mean`, `variance`, broadcast to the kept axes from the right)
    or computed by `adapt(data)` over all the other axes, batch by batch with Keras's running
    combination; then they are the layer's non-trainable weights `mean`, `variance` (and
    `count`, kept at 0 as Keras does), saved with the model.

    Args:
      axis: the axis or axes with statistics of their own (default -1, the features); None for
        one scalar mean and variance.
      mean, variance: the statistics (both or neither).
      invert: apply the inverse transformation.

    >>> layer = sl.layers.Normalization(axis=None)
    >>> layer.adapt(np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32))
    >>> [round(float(v), 4) for v in layer(np.array([1.0, 2.0, 3.0], np.float32))]
    [-1.4142, -0.7071, 0.0]
    """

    def __init__(
        self,
        axis: Any = -1,
        mean: Any = None,
        variance: Any = None,
        invert: bool = False,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        elif isinstance(axis, int):
            axis = (axis,)
        self.axis = tuple(axis)
        self.input_mean = mean
        self.input_variance = variance
        self.invert = bool(invert)
        self.supports_masking = True
        self._build_input_shape = None
        if (mean is not None) != (variance is not None):
            raise ValueError(
                "When setting values directly, both `mean` and `variance` must be set. "
                f"Received: mean={mean} and variance={variance}"
            )
        if mean is not None:
            if np.shape(mean) != np.shape(variance):
                raise ValueError(
                    "When setting values directly, `mean` and `variance` must have the same "
                    f"shape. Received: mean shape {np.shape(mean)} and variance shape "
                    f"{np.shape(variance)}"
                )
            if np.ndim(mean) > len(self.axis):
                raise ValueError(
                    "The rank of `mean` must be less than or equal to the number of axes "
                    f"({len(self.axis)}). Received: mean shape {np.shape(mean)} for axis "
                    f"{self.axis}"
                )

    def build(self, input_shape: Any) -> None:
        input_shape = tuple(input_shape)
        ndim = len(input_shape)
        self._build_input_shape = input_shape
        if any(a < -ndim or a >= ndim for a in self.axis):
            raise ValueError(
                "All `axis` values must be in the range [-ndim, ndim). Received inputs with "
                f"ndim={ndim}, while axis={self.axis}"
            )
        self._keep_axis = tuple(sorted(a % ndim for a in self.axis))
        for d in self._keep_axis:
            if input_shape[d] is None:
                raise ValueError(
                    f"All `axis` values to be kept must have a known shape. Received "
                    f"axis={self.axis}, inputs.shape={input_shape}, with unknown axis at "
                    f"index {d}"
                )
        self._reduce_axis = tuple(d for d in range(ndim) if d not in self._keep_axis)
        self._broadcast_shape = [input_shape[d] if d in self._keep_axis else 1 for d in range(ndim)]
        self._mean_and_var_shape = tuple(input_shape[d] for d in self._keep_axis)
        if self.input_mean is None:
            shape = self._mean_and_var_shape
            self.adapt_mean = self.add_weight(
                name="mean", shape=shape, initializer="zeros", trainable=False
            )
            self.adapt_variance = self.add_weight(
                name="variance", shape=shape, initializer="ones", trainable=False
            )
            self.count = self.add_weight(
                name="count", shape=(), dtype="int32", initializer="zeros", trainable=False
            )
        else:
            self._given = [self._broadcast(v) for v in (self.input_mean, self.input_variance)]

    def _broadcast(self, value: Any) -> np.ndarray:
        """A given statistic aligned with the kept axes from the right, in the broadcast
        shape (Keras's rule)."""
        value = np.asarray(value, dtype=self.dtype)
        if value.ndim:
            expanded = [1] * len(self._broadcast_shape)
            for i in range(1, value.ndim + 1):
                expanded[self._keep_axis[-i]] = value.shape[-i]
            value = value.reshape(expanded)
        return np.broadcast_to(value, self._broadcast_shape)

    def adapt(self, data: Any) -> None:
        """Computes the mean and variance of `data` (an array, a `sl.data` dataset of batches,
        a `PyDataset` or an iterable of batches) over the non-kept axes, and stores them in
        the layer's weights.

        Raises:
          ValueError: data whose kept axes differ from the shape the layer was built for.
        """
        if self.input_mean is not None:
            raise ValueError(
                f"{self.name}: adapt() cannot be used when `mean` and `variance` are given."
            )
        total_mean = total_var = None
        total_count = 0
        for batch in adapt_data.batches(data, what=f"{self.name}.adapt"):
            batch = np.asarray(batch, dtype=self.dtype)
            if not self.built:
                self.build(batch.shape)
                self.built = True
            for d in self._keep_axis:
                if batch.ndim != len(self._build_input_shape) or (
                    batch.shape[d] != self._build_input_shape[d]
                ):
                    raise ValueError(
                        f"The layer was built with input_shape={self._build_input_shape}, "
                        "but adapt() is being called with data with an incompatible shape, "
                        f"data.shape={batch.shape}"
                    )
            batch_mean = np.mean(batch, axis=self._reduce_axis)
            batch_var = np.var(batch, axis=self._reduce_axis)
            batch_count = int(np.prod([batch.shape[d] for d in self._reduce_axis]))
            if total_mean is None:
                total_mean, total_var, total_count = batch_mean, batch_var, batch_count
                continue
            total_count += batch_count
            batch_weight = batch_count / total_count
            existing_weight = 1.0 - batch_weight
            new_mean = total_mean * existing_weight + batch_mean * batch_weight
            total_var = (total_var + (total_mean - new_mean) ** 2) * existing_weight + (
                batch_var + (batch_mean - new_mean) ** 2
            ) * batch_weight
            total_mean = new_mean
        if total_mean is None:
            raise ValueError(f"{self.name}.adapt() received no batches.")
        runtime.write_values(  # as set_weights writes them, whichever graph built the layer
            self.graph,
            [self.adapt_mean, self.adapt_variance],
            [np.asarray(total_mean, self.dtype), np.asarray(total_var, self.dtype)],
            f"layer {self.name!r}",
        )

    def call(self, inputs: Any) -> Any:
        x = fill_ops.cast(inputs, self.dtype)
        if self.input_mean is not None:
            mean, variance = (core_ops.constant(v) for v in self._given)
        else:
            mean = array_ops.reshape(self.adapt_mean, self._broadcast_shape)
            variance = array_ops.reshape(self.adapt_variance, self._broadcast_shape)
        scale = math_ops.maximum(
            unary_ops.sqrt(variance), core_ops.constant(config.epsilon(), dtype=self.dtype)
        )
        if self.invert:
            return mean + x * scale
        return (x - mean) / scale

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "axis": self.axis,
            "invert": self.invert,
            "mean": np.array(self.input_mean).tolist(),
            "variance": np.array(self.input_variance).tolist(),
        }
