"""`BatchNormalization` (Keras 3 arguments and arithmetic)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import constraints, initializers, regularizers
from sluice._keras.layers.base import Layer
from sluice._keras.layers.normalization.normalize import _broadcast, _normalize
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops


@export("layers.BatchNormalization")
class BatchNormalization(Layer):
    """Normalizes along `axis` with batch statistics in training and moving statistics in
    inference:

        training:   mean, var = mean and (biased) variance of the batch over the other axes
                    moving_mean = momentum * moving_mean + (1 - momentum) * mean   (same for var)
        inference:  mean, var = moving_mean, moving_variance
        output = (inputs - mean) / sqrt(var + epsilon) * gamma + beta

    The moving statistics are updated by each training step (an update op the training step
    runs), never by predict or evaluate. A layer with `trainable=False` always runs in inference
    mode, as in Keras (for fine-tuning). With a mask (e.g. from Embedding), masked positions do
    not count in the batch statistics.

    Weights: `gamma`, `beta` (trainable), `moving_mean`, `moving_variance` (non-trainable), each
    of the size of `axis`.

    Args:
      axis: the feature axis (or a list of axes), default -1 (channels last).
      momentum: the moving statistics' decay.
      epsilon: added to the variance.
      center, scale: whether to use `beta` and `gamma`.
      beta_initializer, gamma_initializer, moving_mean_initializer,
      moving_variance_initializer, beta_regularizer, gamma_regularizer: as named.
      beta_constraint, gamma_constraint: applied to beta and gamma after each optimizer step.
      synchronized: accepted for Keras signatures.
    """

    def __init__(
        self,
        axis: Any = -1,
        momentum: float = 0.99,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        moving_mean_initializer: Any = "zeros",
        moving_variance_initializer: Any = "ones",
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
        synchronized: bool = False,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.axis = axis
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center, self.scale = center, scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.synchronized = synchronized
        self.supports_masking = True

    def build(self, input_shape: tuple) -> None:
        rank = len(input_shape)
        axes = self.axis if isinstance(self.axis, (list, tuple)) else [self.axis]
        self._axes = sorted(a % rank for a in axes)
        shape = tuple(input_shape[a] for a in self._axes)
        if None in shape:
            raise ValueError(
                f"BatchNormalization {self.name!r}: axis {self.axis} of input shape {input_shape} "
                "must be known."
            )
        self._rank = rank
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight(
                shape=shape, initializer=self.gamma_initializer,
                regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                name="gamma", autocast=False,
            )  # fmt: skip
        if self.center:
            self.beta = self.add_weight(
                shape=shape, initializer=self.beta_initializer,
                regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                name="beta", autocast=False,
            )  # fmt: skip
        self.moving_mean = self.add_weight(
            shape=shape, initializer=self.moving_mean_initializer, trainable=False,
            name="moving_mean", autocast=False,
        )  # fmt: skip
        self.moving_variance = self.add_weight(
            shape=shape, initializer=self.moving_variance_initializer, trainable=False,
            name="moving_variance", autocast=False,
        )  # fmt: skip

    def _moments(self, x: Any, mask: Any) -> tuple[Any, Any, Any, Any]:
        """Batch mean and variance, broadcastable and shaped like the parameters."""
        reduction = [a for a in range(self._rank) if a not in self._axes]
        if mask is None:
            mean = reduction_ops.reduce_mean(x, axis=reduction, keepdims=True)
            var = reduction_ops.reduce_mean(
                unary_ops.square(x - mean), axis=reduction, keepdims=True
            )
        else:
            weight = fill_ops.cast(mask, x.dtype)
            while weight.shape.rank < self._rank:
                weight = array_ops.expand_dims(weight, -1)
            weight = weight * fill_ops.ones_like(x)
            count = math_ops.maximum(
                reduction_ops.reduce_sum(weight, axis=reduction, keepdims=True),
                core_ops.convert_to_tensor(1e-7, dtype=x.dtype),
            )
            mean = reduction_ops.reduce_sum(x * weight, axis=reduction, keepdims=True) / count
            var = (
                reduction_ops.reduce_sum(
                    unary_ops.square(x - mean) * weight, axis=reduction, keepdims=True
                )
                / count
            )
        param_shape = self.moving_mean.shape.as_list()
        return mean, var, array_ops.reshape(mean, param_shape), array_ops.reshape(var, param_shape)

    def call(self, inputs: Any, training: bool = False, mask: Any = None) -> Any:
        # 16-bit inputs (a mixed policy) are normalized in float32, as Keras 3 does (its
        # weights are never autocast), and the result is cast back
        x = inputs
        if x.dtype in (dtypes.float16, dtypes.bfloat16):
            upcast = fill_ops.cast(x, dtypes.float32)
            return fill_ops.cast(self.call(upcast, training, mask), x.dtype)
        if training and self.trainable:
            mean, var, flat_mean, flat_var = self._moments(x, mask)
            momentum = core_ops.convert_to_tensor(self.momentum, dtype=x.dtype)
            rest = core_ops.convert_to_tensor(1.0 - self.momentum, dtype=x.dtype)
            for moving, value in ((self.moving_mean, flat_mean), (self.moving_variance, flat_var)):
                new = moving.value() * momentum + value * rest
                self.add_update(moving.assign(new, read_value=False))
        else:
            mean = _broadcast(self, self.moving_mean.value())
            var = _broadcast(self, self.moving_variance.value())
        epsilon = core_ops.convert_to_tensor(self.epsilon, dtype=x.dtype)
        return _normalize(self, x - mean, var + epsilon)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "axis": self.axis,
            "momentum": self.momentum,
            "epsilon": self.epsilon,
            "center": self.center,
            "scale": self.scale,
            "beta_initializer": initializers.serialize(self.beta_initializer),
            "gamma_initializer": initializers.serialize(self.gamma_initializer),
            "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
            "moving_variance_initializer": initializers.serialize(self.moving_variance_initializer),
            "beta_regularizer": regularizers.serialize(self.beta_regularizer),
            "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
            "beta_constraint": constraints.serialize(self.beta_constraint),
            "gamma_constraint": constraints.serialize(self.gamma_constraint),
            "synchronized": self.synchronized,
        }
