"""TF1's functional core layers: `sl.layers.dense`, `dropout`, `flatten` (`tf.layers.*` in
TF 1.15). Scopes, weight names and defaults: see `tf1_base`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sluice._export import export
from sluice._tf1.cells.initializers import zeros_initializer
from sluice._tf1.layers import tf1_base
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import einsum_ops, matmul_ops
from sluice.framework.ops.nn import nn_ops


@export("layers.dense")
def dense(
    inputs: Any,
    units: int,
    activation: Callable | str | None = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = zeros_initializer(),
    kernel_regularizer: Callable | None = None,
    bias_regularizer: Callable | None = None,
    activity_regularizer: Callable | None = None,
    kernel_constraint: Callable | None = None,
    bias_constraint: Callable | None = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """`activation(inputs @ kernel + bias)` over the last axis of `inputs` (TF1
    `tf.layers.dense`), with variables `<scope>/kernel` `[in, units]` and `<scope>/bias`.

    Args:
      inputs: a floating Tensor of rank >= 2 whose last dimension is known.
      units: the output size.
      activation: a callable, a Keras activation name, or None (linear).
      use_bias: adds the `bias` variable.
      kernel_initializer: None: the variable scope's initializer, else glorot uniform.
      bias_initializer: zeros by default.
      kernel_regularizer, bias_regularizer: `regularizer(variable) -> loss`, added to the
        REGULARIZATION_LOSSES collection.
      activity_regularizer: `regularizer(output)`, its loss divided by the batch size.
      kernel_constraint, bias_constraint: kept on the variables for optimizers that project.
      trainable: adds the variables to TRAINABLE_VARIABLES.
      name: the variable scope (default: a fresh `dense`, `dense_1`, ...).
      reuse: reuse the variables of the scope `name` (True or AUTO_REUSE).

    Returns:
      A Tensor of `inputs`' shape with the last dimension `units`.

    Raises:
      ValueError: `inputs` of rank < 2 or with an unknown last dimension.
      TypeError: non-floating inputs.

    >>> x = sl.placeholder(sl.float32, [None, 3])
    >>> y = sl.layers.dense(x, 4, activation=sl.nn.relu)
    >>> [v.name for v in sl.trainable_variables()], y.shape
    (['dense/kernel:0', 'dense/bias:0'], TensorShape([None, 4]))
    """
    with tf1_base.layer_scope(name, "dense", reuse):
        inputs = core_ops.convert_to_tensor(inputs, name="inputs")
        dtype = tf1_base.float_dtype(inputs, "Dense")
        rank = inputs.shape.rank
        if rank is not None and rank < 2:
            raise ValueError(
                f"Input 0 of layer dense is incompatible with the layer: expected min_ndim=2, "
                f"found ndim={rank} (shape {inputs.shape})"
            )
        last = None if rank is None else inputs.shape[-1]
        if last is None:
            raise ValueError(
                f"The last dimension of the inputs to `Dense` should be defined. Found `None` "
                f"(shape {inputs.shape})."
            )
        units = int(units)
        if units < 1:
            raise ValueError(f"dense: units must be a positive int, got {units}")
        kernel = tf1_base.add_weight(
            "kernel", [last, units], dtype, kernel_initializer, kernel_regularizer,
            kernel_constraint, trainable,
        )  # fmt: skip
        if rank > 2:
            outputs = einsum_ops.tensordot(inputs, kernel, [[rank - 1], [0]])
            outputs.set_shape(inputs.shape.as_list()[:-1] + [units])
        else:
            outputs = matmul_ops.matmul(inputs, kernel)
        if use_bias:
            bias = tf1_base.add_weight(
                "bias", [units], dtype, bias_initializer, bias_regularizer, bias_constraint,
                trainable,
            )  # fmt: skip
            outputs = nn_ops.bias_add(outputs, bias)
        return tf1_base.finish(outputs, activation, activity_regularizer)


@export("layers.dropout")
def dropout(
    inputs: Any,
    rate: float = 0.5,
    noise_shape: Any = None,
    seed: int | None = None,
    training: Any = False,
    name: str | None = None,
) -> Tensor:
    """Drops each element with probability `rate` and scales the others by `1 / (1 - rate)`,
    in training only (TF1 `tf.layers.dropout`; note the default `training=False`).

    Args:
      inputs: a floating Tensor.
      rate: the probability to drop an element, in [0, 1).
      noise_shape: the shape of the keep/drop choices, broadcast to `inputs`.
      seed: the op seed of the draw.
      training: a Python bool, or a scalar bool Tensor (one graph for both modes: the
        dropout runs only when it is true).
      name: the name scope (default: a fresh `dropout`, `dropout_1`, ...).

    Returns:
      A Tensor like `inputs`.

    >>> x = sl.ones([2, 3])
    >>> sl.Session().run(sl.layers.dropout(x, 0.5)).tolist()  # training=False: unchanged
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    with tf1_base.layer_scope(name, "dropout", None):
        inputs = core_ops.convert_to_tensor(inputs, name="inputs")
        tf1_base.float_dtype(inputs, "Dropout")
        if not isinstance(rate, Tensor) and not 0 <= float(rate) < 1:
            raise ValueError(f"dropout: rate must be a float in [0, 1), got {rate}")
        return tf1_base.smart_cond(
            training,
            lambda: nn_ops.dropout(inputs, noise_shape=noise_shape, seed=seed, rate=rate),
            lambda: core_ops.identity(inputs),
        )


@export("layers.flatten")
def flatten(inputs: Any, name: str | None = None, data_format: str = "channels_last") -> Tensor:
    """`inputs` reshaped to `[batch, everything else]` (TF1 `tf.layers.flatten`); with
    `channels_first` the channels are moved last first, so the order of the features matches a
    channels-last model's.

    >>> sl.layers.flatten(sl.zeros([4, 2, 3, 5])).shape
    TensorShape([4, 30])
    """
    channels_first = tf1_base.channels_first(data_format, "flatten")
    with tf1_base.layer_scope(name, "flatten", None):
        inputs = core_ops.convert_to_tensor(inputs, name="inputs")
        rank = inputs.shape.rank
        if rank is None or rank < 1:
            raise ValueError(
                f"Input 0 of layer flatten is incompatible with the layer: expected min_ndim=1, "
                f"found shape {inputs.shape}"
            )
        if channels_first and rank > 1:
            inputs = array_ops.transpose(inputs, [0, *range(2, rank), 1])
        dims = inputs.shape.as_list()
        if None not in dims[1:]:
            features = int(np.prod(dims[1:], dtype=np.int64))
            outputs = array_ops.reshape(inputs, [-1, features])
        elif dims[0] is not None:
            outputs = array_ops.reshape(inputs, [dims[0], -1])
        else:
            batch = fill_ops.shape(inputs)[0]
            outputs = array_ops.reshape(inputs, join_ops.stack([batch, -1]))
        features = None if None in dims[1:] else int(np.prod(dims[1:], dtype=np.int64))
        outputs.set_shape([dims[0], features])
        return outputs
