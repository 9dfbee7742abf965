"""Activation layers: ReLU, LeakyReLU, PReLU, Softmax (Keras 3 arguments and arithmetic).

>>> y = ReLU(max_value=6.0)(sl.Input((3,)))
>>> y.shape
TensorShape([None, 3])
"""

from __future__ import annotations

import warnings
from typing import Any

from sluice._export import export
from sluice._keras.layers import initializers, regularizers
from sluice._keras.layers.base import Layer
from sluice._keras.layers.core import _check_no_constraint
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops
from sluice.framework.ops.nn import nn_ops


def _const(x: Any, value: float) -> Any:
    return core_ops.convert_to_tensor(value, dtype=x.dtype)


@export("layers.ReLU")
class ReLU(Layer):
    """Keras's rectifier with an optional ceiling, leak and threshold:

        f(x) = min(x, max_value)                 if x > threshold   (no ceiling when None)
        f(x) = negative_slope * (x - threshold)  otherwise

    Args:
      max_value: the ceiling (>= 0), or None.
      negative_slope: the slope below the threshold (>= 0).
      threshold: the value below which the output is leaked (>= 0).

    >>> relu = ReLU(max_value=2.0, negative_slope=0.5)
    >>> np.round(sl.Session().run(relu(sl.constant([[-2.0, 1.0, 3.0]]))), 3)
    array([[-1.,  1.,  2.]], dtype=float32)
    """

    def __init__(
        self,
        max_value: float | None = None,
        negative_slope: float = 0.0,
        threshold: float = 0.0,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0.0:
            raise ValueError(
                f"max_value of a ReLU layer cannot be a negative value. Received: {max_value}"
            )
        if negative_slope is None or negative_slope < 0.0:
            raise ValueError(
                "negative_slope of a ReLU layer cannot be a negative value. "
                f"Received: {negative_slope}"
            )
        if threshold is None or threshold < 0.0:
            raise ValueError(
                f"threshold of a ReLU layer cannot be a negative value. Received: {threshold}"
            )
        self.max_value = None if max_value is None else float(max_value)
        self.negative_slope = float(negative_slope)
        self.threshold = float(threshold)
        self.supports_masking = True

    def call(self, inputs: Any) -> Any:
        x = inputs
        if self.threshold == 0.0:
            y = nn_ops.relu(x)
        else:
            above = math_ops.greater(x, _const(x, self.threshold))
            y = gather_ops.where(above, x, fill_ops.zeros_like(x))
        if self.max_value is not None:
            y = math_ops.minimum(y, _const(x, self.max_value))
        if self.negative_slope != 0.0:
            below = nn_ops.relu(_const(x, self.threshold) - x)
            y = y - _const(x, self.negative_slope) * below
        return y

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "max_value": self.max_value,
            "negative_slope": self.negative_slope,
            "threshold": self.threshold,
        }


@export("layers.LeakyReLU")
class LeakyReLU(Layer):
    """`x` for `x >= 0`, `negative_slope * x` otherwise.

    Args:
      negative_slope: the slope for negative inputs (>= 0); Keras 2's `alpha` is accepted too,
        with a DeprecationWarning.
    """

    def __init__(self, negative_slope: float = 0.3, **kwargs: Any):
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
            warnings.warn(
                "Argument `alpha` is deprecated. Use `negative_slope` instead.",
                DeprecationWarning,
                stacklevel=2,
            )
        super().__init__(**kwargs)
        if negative_slope is None or negative_slope < 0:
            raise ValueError(
                "The negative_slope value of a Leaky ReLU layer cannot be None or negative. "
                f"Received: negative_slope={negative_slope}"
            )
        self.negative_slope = float(negative_slope)
        self.supports_masking = True

    def call(self, inputs: Any) -> Any:
        return nn_ops.leaky_relu(inputs, alpha=self.negative_slope)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "negative_slope": self.negative_slope}


@export("layers.PReLU")
class PReLU(Layer):
    """A leaky ReLU whose slopes are learned: `relu(x) - alpha * relu(-x)`.

    Weight: `alpha`, of the input shape without the batch, with size 1 along `shared_axes`
    (axes counted with the batch as 0: `shared_axes=[1, 2]` shares over height and width).

    Args:
      alpha_initializer, alpha_regularizer: for `alpha`.
      alpha_constraint: accepted for Keras signatures; must be None.
      shared_axes: an axis or a list of axes along which one slope is shared.
    """

    def __init__(
        self,
        alpha_initializer: Any = "Zeros",
        alpha_regularizer: Any = None,
        alpha_constraint: Any = None,
        shared_axes: Any = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        _check_no_constraint(alpha_constraint=alpha_constraint)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        if shared_axes is None:
            self.shared_axes = None
        elif isinstance(shared_axes, (list, tuple)):
            self.shared_axes = [int(a) for a in shared_axes]
        else:
            self.shared_axes = [int(shared_axes)]
        self.supports_masking = True

    def build(self, input_shape: tuple) -> None:
        param_shape = list(input_shape[1:])
        for axis in self.shared_axes or ():
            if not 1 <= axis < len(input_shape):
                raise ValueError(
                    f"PReLU {self.name!r}: shared axis {axis} is not an axis of the inputs "
                    f"(without the batch) of shape {input_shape}."
                )
            param_shape[axis - 1] = 1
        if None in param_shape:
            raise ValueError(
                f"PReLU {self.name!r}: the input shape {input_shape} has unknown dimensions "
                "that are not in shared_axes; alpha needs a known shape."
            )
        self.alpha = self.add_weight(
            shape=param_shape,
            initializer=self.alpha_initializer,
            regularizer=self.alpha_regularizer,
            name="alpha",
        )

    def call(self, inputs: Any) -> Any:
        return nn_ops.relu(inputs) - self.alpha.value() * nn_ops.relu(-inputs)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "alpha_initializer": initializers.serialize(self.alpha_initializer),
            "alpha_regularizer": regularizers.serialize(self.alpha_regularizer),
            "shared_axes": self.shared_axes,
        }


@export("layers.Softmax")
class Softmax(Layer):
    """Softmax along `axis` (an int or a tuple of axes).

    With a mask (True where valid, broadcastable against the inputs; a mask of lower rank, such
    as an Embedding's [batch, time] mask, gets trailing axes of size 1), masked positions get a
    large negative logit (-1e9) before the softmax and an output of 0, as in Keras.

    >>> y = Softmax()(sl.constant([[0.0, np.log(3.0)]]))
    >>> np.round(sl.Session().run(y), 6)
    array([[0.25, 0.75]], dtype=float32)
    """

    def __init__(self, axis: Any = -1, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis = tuple(int(a) for a in axis) if isinstance(axis, (list, tuple)) else int(axis)
        self.supports_masking = True

    def call(self, inputs: Any, mask: Any = None) -> Any:
        x = inputs
        if mask is not None:
            mask = fill_ops.cast(mask, x.dtype)
            while mask.shape.rank is not None and mask.shape.rank < x.shape.rank:
                mask = array_ops.expand_dims(mask, -1)
            x = x + (_const(x, 1.0) - mask) * _const(x, -1e9)
        if isinstance(self.axis, tuple):
            axes = list(self.axis)
            shifted = x - core_ops.stop_gradient(
                reduction_ops.reduce_max(x, axis=axes, keepdims=True)
            )
            e = unary_ops.exp(shifted)
            y = e / reduction_ops.reduce_sum(e, axis=axes, keepdims=True)
        else:
            y = nn_ops.softmax(x, axis=self.axis)
        if mask is not None:
            y = y * mask
        return y

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        axis = list(self.axis) if isinstance(self.axis, tuple) else self.axis
        return {**super().get_config(), "axis": axis}
