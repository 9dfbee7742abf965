"""`LayerNormalization`: each example normalized over its last axes."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import constraints, initializers, regularizers
from sluice._keras.layers.base import Layer
from sluice._keras.layers.normalization.normalize import _broadcast, _normalize
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import reduction_ops, unary_ops


@export("layers.LayerNormalization")
class LayerNormalization(Layer):
    """Normalizes each example over `axis` (Keras 3 arithmetic):

        mean, var = mean and (biased) variance of the inputs over `axis`
        output = (inputs - mean) / sqrt(var + epsilon) * gamma + beta
        rms_scaling: output = inputs / sqrt(mean(inputs ** 2) + epsilon) * gamma

    There are no moving statistics: training and inference compute the same thing.

    Weights: `gamma` and `beta`, shaped like the normalized axes.

    Args:
      axis: the axis or list of axes to normalize over (default -1).
      epsilon: added to the variance.
      center, scale: whether to use `beta` and `gamma`.
      rms_scaling: normalize by the root mean square only (no centering; uses `gamma` only).
      beta_initializer, gamma_initializer, beta_regularizer, gamma_regularizer: as named.
      beta_constraint, gamma_constraint: applied to beta and gamma after each optimizer step.

    >>> y = LayerNormalization()(sl.Input((4,)))
    >>> y.shape
    TensorShape([None, 4])
    """

    def __init__(
        self,
        axis: Any = -1,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        rms_scaling: bool = False,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, int):
            self.axis = axis
        else:
            raise TypeError(
                "Expected an int or a list/tuple of ints for the argument 'axis', "
                f"but received: {axis}"
            )
        self.epsilon = float(epsilon)
        self.center, self.scale, self.rms_scaling = bool(center), bool(scale), bool(rms_scaling)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.supports_masking = True

    def build(self, input_shape: tuple) -> None:
        rank = len(input_shape)
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        if any(not -rank <= a < rank for a in axes):
            raise ValueError(
                f"LayerNormalization {self.name!r}: axis {self.axis} is out of range for input "
                f"shape {input_shape}."
            )
        self._axes = sorted({a % rank for a in axes})
        self._rank = rank
        shape = tuple(input_shape[a] for a in self._axes)
        if None in shape:
            raise ValueError(
                f"LayerNormalization {self.name!r}: axis {self.axis} of input shape "
                f"{input_shape} must be known."
            )
        self.gamma = self.beta = None
        if self.scale or self.rms_scaling:
            self.gamma = self.add_weight(
                shape=shape, initializer=self.gamma_initializer,
                regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                name="gamma",
            )  # fmt: skip
        if self.center and not self.rms_scaling:
            self.beta = self.add_weight(
                shape=shape, initializer=self.beta_initializer,
                regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                name="beta",
            )  # fmt: skip

    def call(self, inputs: Any) -> Any:
        x = inputs
        epsilon = core_ops.convert_to_tensor(self.epsilon, dtype=x.dtype)
        if self.rms_scaling:
            mean_square = reduction_ops.reduce_mean(
                unary_ops.square(x), axis=self._axes, keepdims=True
            )
            return x * unary_ops.rsqrt(mean_square + epsilon) * _broadcast(self, self.gamma.value())
        mean = reduction_ops.reduce_mean(x, axis=self._axes, keepdims=True)
        centered = x - mean
        var = reduction_ops.reduce_mean(unary_ops.square(centered), axis=self._axes, keepdims=True)
        return _normalize(self, centered, var + epsilon)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "axis": self.axis,
            "epsilon": self.epsilon,
            "center": self.center,
            "scale": self.scale,
            "rms_scaling": self.rms_scaling,
            "beta_initializer": initializers.serialize(self.beta_initializer),
            "gamma_initializer": initializers.serialize(self.gamma_initializer),
            "beta_regularizer": regularizers.serialize(self.beta_regularizer),
            "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
            "beta_constraint": constraints.serialize(self.beta_constraint),
            "gamma_constraint": constraints.serialize(self.gamma_constraint),
        }
