"""`GroupNormalization`: channels split into groups, each normalized per example."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import constraints, initializers, regularizers
from sluice._keras.layers.base import Layer
from sluice._keras.layers.input_spec import InputSpec
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import reduction_ops, unary_ops


def _dynamic_shape(x: Any, dims: list) -> Any:
    """`dims` (ints, None where unknown) as a shape for `reshape`: a list of ints when at most
    one is unknown (that one -1), else a vector with the unknown ones read from `x`."""
    unknown = [i for i, d in enumerate(dims) if d is None]
    if len(unknown) <= 1:
        return [-1 if d is None else d for d in dims]
    actual = fill_ops.shape(x)
    return [actual[i] if d is None else d for i, d in enumerate(dims)]


@export("layers.GroupNormalization")
class GroupNormalization(Layer):
    """Group normalization (Wu & He, 2018; Keras 3's `GroupNormalization`): the channels of
    `axis` are split into `groups` groups of `channels // groups`, and each example's values
    in one group (those channels at every other non-batch position) are normalized by their
    own mean and (biased) variance:

        x: [batch, ..., channels] -> [batch, ..., groups, channels // groups]
        mean, var = moments over every axis but batch and groups
        output = (x - mean) / sqrt(var + epsilon) * gamma + beta   (gamma, beta per channel)

    `groups=1` is close to LayerNormalization, `groups=-1` (one group per channel) is instance
    normalization. Training and inference compute the same thing.

    Weights: `gamma` [channels] (scale=True), `beta` [channels] (center=True).

    Args:
      groups: the number of groups (a divisor of the channel count), or -1 for one per
        channel. Default 32.
      axis: the channel axis (default -1).
      epsilon: added to the variance (default 1e-3).
      center, scale: whether to use `beta` and `gamma`.
      beta_initializer, gamma_initializer, beta_regularizer, gamma_regularizer,
      beta_constraint, gamma_constraint: as named.

    >>> GroupNormalization(groups=2)(sl.Input((5, 4))).shape
    TensorShape([None, 5, 4])
    """

    def __init__(
        self,
        groups: int = 32,
        axis: int = -1,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
        **kwargs: Any,
    ):
        if not isinstance(groups, int) or (groups <= 0 and groups != -1):
            raise ValueError(
                "Received an invalid value for argument `groups`, expected a positive integer "
                f"(or `-1` for instance normalization). Received: groups={groups}"
            )
        super().__init__(**kwargs)
        self.supports_masking = True
        self.groups = groups
        self.axis = axis
        self.epsilon = epsilon
        self.center, self.scale = center, scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)

    def _channel_axis(self, rank: int) -> int:
        if not isinstance(self.axis, int) or not -rank <= self.axis < rank or self.axis % rank == 0:
            raise ValueError(
                f"GroupNormalization {self.name!r}: axis {self.axis} must be a non-batch axis of "
                f"inputs of rank {rank}."
            )
        return self.axis % rank

    def build(self, input_shape: tuple) -> None:
        axis = self._channel_axis(len(input_shape))
        dim = input_shape[axis]
        if dim is None:
            raise ValueError(
                f"Axis {self.axis} of input tensor should have a defined dimension but the "
                f"layer received an input with shape {tuple(input_shape)}."
            )
        if self.groups == -1:
            self.groups = dim
        if dim < self.groups:
            raise ValueError(
                f"Number of groups ({self.groups}) cannot be more than the number of channels "
                f"({dim})."
            )
        if dim % self.groups != 0:
            raise ValueError(
                f"Number of groups ({self.groups}) must be a multiple of the number of "
                f"channels ({dim})."
            )
        self.input_spec = InputSpec(ndim=len(input_shape), axes={self.axis: dim})
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight(
                shape=(dim,), name="gamma", initializer=self.gamma_initializer,
                regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
            )  # fmt: skip
        if self.center:
            self.beta = self.add_weight(
                shape=(dim,), name="beta", initializer=self.beta_initializer,
                regularizer=self.beta_regularizer, constraint=self.beta_constraint,
            )  # fmt: skip

    def call(self, inputs: Any) -> Any:
        x = inputs
        rank = x.shape.rank
        axis = self._channel_axis(rank)
        dims = x.shape.as_list()
        channels = dims[axis]
        grouped_dims = dims[:axis] + [self.groups, channels // self.groups] + dims[axis + 1 :]
        grouped = array_ops.reshape(x, _dynamic_shape(x, grouped_dims))
        reduce_axes = [a for a in range(1, rank + 1) if a != axis]
        mean = reduction_ops.reduce_mean(grouped, reduce_axes, keepdims=True)
        centered = grouped - mean
        variance = reduction_ops.reduce_mean(unary_ops.square(centered), reduce_axes, True)
        epsilon = core_ops.convert_to_tensor(self.epsilon, dtype=x.dtype)
        inv = unary_ops.rsqrt(variance + epsilon)
        param_shape = [1] * (rank + 1)
        param_shape[axis : axis + 2] = [self.groups, channels // self.groups]
        if self.gamma is not None:
            inv = inv * array_ops.reshape(self.gamma, param_shape)
        y = centered * inv
        if self.beta is not None:
            y = y + array_ops.reshape(self.beta, param_shape)
        return array_ops.reshape(y, _dynamic_shape(x, dims))

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        self._channel_axis(len(input_shape))
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "groups": self.groups,
            "axis": self.axis,
            "epsilon": self.epsilon,
            "center": self.center,
            "scale": self.scale,
            "beta_initializer": initializers.serialize(self.beta_initializer),
            "gamma_initializer": initializers.serialize(self.gamma_initializer),
            "beta_regularizer": regularizers.serialize(self.beta_regularizer),
            "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
            "beta_constraint": constraints.serialize(self.beta_constraint),
            "gamma_constraint": constraints.serialize(self.gamma_constraint),
        }
