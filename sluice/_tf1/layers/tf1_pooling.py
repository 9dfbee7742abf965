"""TF1's functional pooling layers: `sl.layers.max_pooling1d/2d`, `average_pooling1d/2d` (TF
1.15's `tf.layers.*`); padding and data_format as in `tf1_conv`."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._tf1.layers import tf1_base
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.nn import pool_ops


# -- pooling ------------------------------------------------------------------------------------
def _pool(
    kind: str,
    rank: int,
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str,
    data_format: str,
    name: str | None,
) -> Tensor:
    layer = f"{kind}_pooling{rank}d"
    pool_size = tf1_base.int_tuple(pool_size, rank, "pool_size", layer)
    strides = tf1_base.int_tuple(strides, rank, "strides", layer)
    padding = tf1_base.padding_arg(padding, layer).upper()
    first = tf1_base.channels_first(data_format, layer)
    pool = pool_ops.max_pool if kind == "max" else pool_ops.avg_pool
    with tf1_base.layer_scope(name, layer, None):
        inputs = core_ops.convert_to_tensor(inputs, name="inputs")
        layout = ("NCW" if first else "NWC") if rank == 1 else ("NCHW" if first else "NHWC")
        tf1_base.require_rank(inputs, rank + 2, layer, layout)
        if rank == 1:  # a 2-D pool over a height of 1, as TF1's Pooling1D
            pool_size, strides = (1, *pool_size), (1, *strides)
            inputs = array_ops.expand_dims(inputs, 2 if first else 1)
        fmt = "NCHW" if first else "NHWC"

        def four(v):
            return [1, 1, *v] if first else [1, *v, 1]

        outputs = pool(inputs, four(pool_size), four(strides), padding, data_format=fmt)
        if rank == 1:
            outputs = array_ops.squeeze(outputs, [2 if first else 1])
        return outputs


@export("layers.max_pooling1d")
def max_pooling1d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """The maximum over windows of `[batch, width, channels]` inputs (TF1
    `tf.layers.max_pooling1d`; `strides` has no default, as in TF1)."""
    return _pool("max", 1, inputs, pool_size, strides, padding, data_format, name)


@export("layers.average_pooling1d")
def average_pooling1d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """The mean over windows of `[batch, width, channels]` inputs (TF1
    `tf.layers.average_pooling1d`); with 'same' padding a window's mean is over its elements
    inside the input only."""
    return _pool("average", 1, inputs, pool_size, strides, padding, data_format, name)


@export("layers.max_pooling2d")
def max_pooling2d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """The maximum over windows of 4-D inputs (TF1 `tf.layers.max_pooling2d`).

    Args:
      inputs: a 4-D Tensor in `data_format`.
      pool_size, strides: an int or 2 ints.
      padding: 'valid' or 'same' (any case).
      data_format: 'channels_last' or 'channels_first'.
      name: the name scope (default: a fresh `max_pooling2d`, ...).

    >>> sl.layers.max_pooling2d(sl.zeros([2, 8, 8, 3]), 2, 2).shape
    TensorShape([2, 4, 4, 3])
    """
    return _pool("max", 2, inputs, pool_size, strides, padding, data_format, name)


@export("layers.average_pooling2d")
def average_pooling2d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """The mean over windows of 4-D inputs (TF1 `tf.layers.average_pooling2d`); arguments as
    `max_pooling2d`."""
    return _pool("average", 2, inputs, pool_size, strides, padding, data_format, name)
