"""Keras 3's `numerical_utils.encode_categorical_inputs` as graph ops: integer indices to
"int" (a cast), "one_hot", "multi_hot" or "count" encodings of `depth` classes.

"one_hot" encodes every element (a trailing axis of size 1 is dropped first); "multi_hot" and
"count" encode each sample: they reduce over axis 1 of a rank >= 2 input (axis 0 of a rank-1
input, one sample), as Keras's JAX backend does. Indices outside [0, depth) encode as zeros.
"""

from __future__ import annotations

from typing import Any

from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import reduction_ops

OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count")


def check_output_mode(layer: str, output_mode: str, allowed: tuple = OUTPUT_MODES) -> str:
    if output_mode not in allowed:
        raise ValueError(
            f"{layer}: invalid value for argument `output_mode`. Expected one of "
            f"{allowed}. Received: output_mode={output_mode!r}"
        )
    return output_mode


def encode_categorical_inputs(
    inputs: Any, output_mode: str, depth: int, dtype: Any, count_weights: Any = None
) -> Tensor:
    """`inputs` (integer indices) encoded by `output_mode` (see the module docstring)."""
    inputs = core_ops.convert_to_tensor(inputs)
    dtype = dtypes.as_dtype(dtype)
    if output_mode == "int":
        return fill_ops.cast(inputs, dtype)
    if inputs.shape.rank == 0:
        inputs = array_ops.expand_dims(inputs, -1)
    rank = inputs.shape.rank
    if output_mode == "one_hot":
        if rank > 1 and inputs.shape.dims[-1] == 1:
            inputs = array_ops.squeeze(inputs, [-1])
        return fill_ops.one_hot(inputs, depth, dtype=dtype)
    axis = 1 if rank > 1 else 0
    if output_mode == "multi_hot":
        return reduction_ops.reduce_max(fill_ops.one_hot(inputs, depth, dtype=dtype), axis)
    if count_weights is not None:
        count_weights = core_ops.convert_to_tensor(count_weights)
        hot = fill_ops.one_hot(inputs, depth, dtype=count_weights.dtype)
        hot = hot * array_ops.expand_dims(count_weights, -1)
    else:
        hot = fill_ops.one_hot(inputs, depth, dtype=dtype)
    return reduction_ops.reduce_sum(hot, axis)


def encoded_shape(input_shape: tuple, output_mode: str, depth: int) -> tuple:
    """The static output shape of `encode_categorical_inputs` for `input_shape`."""
    input_shape = tuple(input_shape)
    if output_mode == "int":
        return input_shape
    if not input_shape:
        return (depth,)
    if output_mode == "one_hot":
        if len(input_shape) > 1 and input_shape[-1] == 1:
            return input_shape[:-1] + (depth,)
        return input_shape + (depth,)
    if len(input_shape) == 1:
        return (depth,)
    return input_shape[:1] + input_shape[2:] + (depth,)
