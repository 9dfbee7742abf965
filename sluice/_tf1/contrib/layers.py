"""TF1's `tf.contrib.layers`, the parts TF1 programs use most: `fully_connected`, `conv2d`,
`flatten`, `layer_norm`, `embed_sequence`, and the initializers and regularizer
they take (`xavier_initializer`, `variance_scaling_initializer`, `l2_regularizer`).

Each layer opens `variable_scope(scope, <TF1's default name>)` and makes its variables with
`get_variable` under TF1's names (`fully_connected/weights`, `fully_connected/biases`,
`Conv/weights`, `LayerNorm/gamma`, `EmbedSequence/embeddings`, ...), so TF1 checkpoints and
`reuse=True` find them. (`batch_norm` is not here yet: use `sl.layers.batch_normalization`.)

>>> x = sl.ones([2, 3])
>>> y = sl.contrib.layers.fully_connected(x, 4)
>>> sorted(v.op.name for v in sl.global_variables())
['fully_connected/biases', 'fully_connected/weights']
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

from sluice._export import export
from sluice._tf1.cells.initializers import zeros_initializer
from sluice._tf1.cells.scopes import variable_scope
from sluice._tf1.cells.variable_store import get_variable
from sluice._tf1.nn import embedding_lookup
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import GraphKeys, Tensor, get_default_graph, name_scope
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.composite import nn_impl_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import einsum_ops, math_ops, matmul_ops
from sluice.framework.ops.nn import conv_ops, loss_ops, nn_ops
from sluice.framework.ops.random import random_ops


# -- initializers and regularizers ---------------------------------------------------------------
@export("contrib.layers.variance_scaling_initializer")
def variance_scaling_initializer(
    factor: float = 2.0,
    mode: str = "FAN_IN",
    uniform: bool = False,
    seed: int | None = None,
    dtype: Any = dtypes.float32,
) -> Callable:
    """TF1 contrib's variance scaling: `n` is the fan in, fan out or their mean (`mode`), and
    values are uniform in `[-sqrt(3 factor / n), sqrt(3 factor / n)]`, or truncated normal
    with standard deviation `sqrt(1.3 factor / n)` (contrib's truncation correction).

    Raises:
      TypeError: a dtype that is not floating; ValueError: an unknown mode.
    """
    if not dtypes.as_dtype(dtype).is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")

    def initializer(shape: Any, dtype: Any = dtype, partition_info: Any = None) -> Tensor:
        if not dtypes.as_dtype(dtype).is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        dims = [int(d) for d in shape]
        if dims:
            fan_in = float(dims[-2]) if len(dims) > 1 else float(dims[-1])
            fan_out = float(dims[-1])
        else:
            fan_in = fan_out = 1.0
        for dim in dims[:-2]:
            fan_in *= dim
            fan_out *= dim
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return random_ops.random_uniform(dims, -limit, limit, dtype, seed=seed)
        stddev = math.sqrt(1.3 * factor / n)
        return random_ops.truncated_normal(dims, 0.0, stddev, dtype, seed=seed)

    return initializer


@export("contrib.layers.xavier_initializer", "contrib.layers.xavier_initializer_conv2d")
def xavier_initializer(
    uniform: bool = True, seed: int | None = None, dtype: Any = dtypes.float32
) -> Callable:
    """Glorot and Bengio's initializer: `variance_scaling_initializer(1.0, "FAN_AVG", uniform)`."""
    return variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)


@export("contrib.layers.l2_regularizer")
def l2_regularizer(scale: float, scope: str | None = None) -> Callable:
    """`weights -> scale * l2_loss(weights)` (a function returning None when `scale` is 0).

    Raises:
      ValueError: `scale` is not a number, or negative.
    """
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if not isinstance(scale, numbers.Real):
        raise ValueError(f"scale must be a float, got {scale!r}")
    if scale < 0.0:
        raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale}")
    if scale == 0.0:
        return lambda _: None

    def l2(weights: Any) -> Tensor:
        with name_scope(scope, "l2_regularizer", [weights]) as name:
            factor = core_ops.convert_to_tensor(scale, dtype=weights.dtype.base_dtype)
            return math_ops.multiply(factor, loss_ops.l2_loss(weights), name=name)

    return l2


# -- layers --------------------------------------------------------------------------------------
def _collect(collections: Any, name: str, outputs: Tensor) -> Tensor:
    if collections:
        get_default_graph().add_to_collections(
            [collections] if isinstance(collections, str) else collections, outputs
        )
    return outputs


def _variable(name, shape, dtype, initializer, regularizer, trainable, collections):
    full = None if not collections else [GraphKeys.GLOBAL_VARIABLES] + list(collections)
    return get_variable(
        name,
        shape=shape,
        dtype=dtype,
        initializer=initializer,
        regularizer=regularizer,
        trainable=trainable,
        collections=full,
    )


@export("contrib.layers.flatten")
def flatten(inputs: Any, outputs_collections: Any = None, scope: str | None = None) -> Tensor:
    """`inputs` as `[batch, k]` (TF1 contrib; name scope "Flatten").

    Raises:
      ValueError: `inputs` has rank below 2 or an unknown rank.
    """
    inputs = core_ops.convert_to_tensor(inputs)
    if inputs.shape.rank is None or inputs.shape.rank < 2:
        raise ValueError(f"Inputs must have a least 2 dimensions, got shape {inputs.shape}.")
    with name_scope(scope, "Flatten", [inputs]) as sc:
        rest = inputs.shape.as_list()[1:]
        if all(d is not None for d in rest):
            outputs = array_ops.reshape(inputs, [-1, math.prod(rest)])
        else:
            batch = fill_ops.shape(inputs)[:1]
            outputs = array_ops.reshape(inputs, join_ops.concat([batch, [-1]], 0))
        return _collect(outputs_collections, sc, outputs)


@export("contrib.layers.fully_connected")
def fully_connected(
    inputs: Any,
    num_outputs: int,
    activation_fn: Callable | None = nn_ops.relu,
    normalizer_fn: Callable | None = None,
    normalizer_params: dict | None = None,
    weights_initializer: Callable = xavier_initializer(),
    weights_regularizer: Callable | None = None,
    biases_initializer: Callable | None = zeros_initializer(),
    biases_regularizer: Callable | None = None,
    reuse: Any = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    scope: str | None = None,
) -> Tensor:
    """`activation_fn(inputs @ weights + biases)` over the last axis (TF1 contrib; scope
    "fully_connected", variables `weights` `[in, num_outputs]` and `biases`). With a
    `normalizer_fn` there are no biases: `normalizer_fn(outputs, **normalizer_params)`.

    Raises:
      ValueError: `num_outputs` is not an int, or the last dimension of `inputs` is unknown.
    """
    if not isinstance(num_outputs, numbers.Integral):
        raise ValueError(f"num_outputs type should be one of int, got {type(num_outputs)}.")
    inputs = core_ops.convert_to_tensor(inputs)
    with variable_scope(scope, "fully_connected", [inputs], reuse=reuse) as sc:
        depth = inputs.shape[-1] if inputs.shape.rank else None
        if depth is None:
            raise ValueError(f"fully_connected: the last dimension of inputs {inputs.shape} "
                             "must be known.")  # fmt: skip
        dtype = inputs.dtype.base_dtype
        weights = _variable(
            "weights", [depth, num_outputs], dtype, weights_initializer, weights_regularizer,
            trainable, variables_collections,
        )  # fmt: skip
        if inputs.shape.rank == 2:
            outputs = matmul_ops.matmul(inputs, weights)
        else:
            outputs = einsum_ops.tensordot(inputs, weights, [[inputs.shape.rank - 1], [0]])
        if normalizer_fn is not None:
            outputs = normalizer_fn(outputs, **(normalizer_params or {}))
        elif biases_initializer is not None:
            biases = _variable(
                "biases", [num_outputs], dtype, biases_initializer, biases_regularizer,
                trainable, variables_collections,
            )  # fmt: skip
            outputs = nn_ops.bias_add(outputs, biases)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect(outputs_collections, sc.name, outputs)


@export("contrib.layers.conv2d", "contrib.layers.convolution2d")
def conv2d(
    inputs: Any,
    num_outputs: int,
    kernel_size: Any,
    stride: Any = 1,
    padding: str = "SAME",
    data_format: str | None = None,
    rate: Any = 1,
    activation_fn: Callable | None = nn_ops.relu,
    normalizer_fn: Callable | None = None,
    normalizer_params: dict | None = None,
    weights_initializer: Callable = xavier_initializer(),
    weights_regularizer: Callable | None = None,
    biases_initializer: Callable | None = zeros_initializer(),
    biases_regularizer: Callable | None = None,
    reuse: Any = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    scope: str | None = None,
) -> Tensor:
    """A 2-D convolution (TF1 contrib; scope "Conv", variables `weights`
    `[kh, kw, in, num_outputs]` and `biases`), NHWC.

    Raises:
      ValueError: a data_format other than NHWC, or inputs that are not 4-D.
    """
    if data_format not in (None, "NHWC"):
        raise ValueError(f"contrib.layers.conv2d: data_format {data_format!r}: sluice takes NHWC.")
    inputs = core_ops.convert_to_tensor(inputs)
    if inputs.shape.rank != 4:
        raise ValueError(f"contrib.layers.conv2d: inputs must be 4-D NHWC, got {inputs.shape}.")
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    rh, rw = (rate, rate) if isinstance(rate, int) else rate
    with variable_scope(scope, "Conv", [inputs], reuse=reuse) as sc:
        dtype = inputs.dtype.base_dtype
        weights = _variable(
            "weights", [kh, kw, inputs.shape[-1], num_outputs], dtype, weights_initializer,
            weights_regularizer, trainable, variables_collections,
        )  # fmt: skip
        outputs = conv_ops.conv2d(
            inputs, weights, [1, sh, sw, 1], padding.upper(), dilations=[1, rh, rw, 1]
        )
        if normalizer_fn is not None:
            outputs = normalizer_fn(outputs, **(normalizer_params or {}))
        elif biases_initializer is not None:
            biases = _variable(
                "biases", [num_outputs], dtype, biases_initializer, biases_regularizer,
                trainable, variables_collections,
            )  # fmt: skip
            outputs = nn_ops.bias_add(outputs, biases)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect(outputs_collections, sc.name, outputs)


@export("contrib.layers.layer_norm")
def layer_norm(
    inputs: Any,
    center: bool = True,
    scale: bool = True,
    activation_fn: Callable | None = None,
    reuse: Any = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    begin_norm_axis: int = 1,
    begin_params_axis: int = -1,
    scope: str | None = None,
) -> Tensor:
    """Normalises over the axes from `begin_norm_axis` on (epsilon 1e-12), then `gamma * x +
    beta` with `beta`, `gamma` of shape `inputs.shape[begin_params_axis:]` (TF1 contrib; scope
    "LayerNorm").

    Raises:
      ValueError: an unknown rank, or an axis outside the inputs' rank.
    """
    inputs = core_ops.convert_to_tensor(inputs)
    rank = inputs.shape.rank
    if rank is None:
        raise ValueError(f"Inputs {inputs.name} has undefined rank.")
    with variable_scope(scope, "LayerNorm", [inputs], reuse=reuse) as sc:
        begin_params_axis = begin_params_axis % rank if begin_params_axis < 0 else begin_params_axis
        if begin_params_axis >= rank or begin_norm_axis >= rank or begin_norm_axis < -rank:
            raise ValueError(
                f"begin_params_axis ({begin_params_axis}) and begin_norm_axis "
                f"({begin_norm_axis}) must be < rank(inputs) ({rank})"
            )
        params_shape = inputs.shape.as_list()[begin_params_axis:]
        if any(d is None for d in params_shape):
            raise ValueError(f"Inputs {inputs.name}: shape[{begin_params_axis}:] is not known.")
        dtype = inputs.dtype.base_dtype
        beta = gamma = None
        if center:
            beta = _variable("beta", params_shape, dtype, zeros_initializer(), None, trainable,
                             variables_collections)  # fmt: skip
        if scale:
            gamma = _variable("gamma", params_shape, dtype, _ones, None, trainable,
                              variables_collections)  # fmt: skip
        norm_axes = list(range(begin_norm_axis % rank, rank))
        mean, variance = nn_impl_ops.moments(inputs, norm_axes, keep_dims=True)
        outputs = nn_impl_ops.batch_normalization(
            inputs, mean, variance, offset=beta, scale=gamma, variance_epsilon=1e-12
        )
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect(outputs_collections, sc.name, outputs)


def _ones(shape: Any, dtype: Any = dtypes.float32, partition_info: Any = None) -> Tensor:
    return fill_ops.ones(shape, dtype)


@export("contrib.layers.embed_sequence")
def embed_sequence(
    ids: Any,
    vocab_size: int | None = None,
    embed_dim: int | None = None,
    unique: bool = False,
    initializer: Any = None,
    regularizer: Callable | None = None,
    trainable: bool = True,
    scope: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """The rows of an `[vocab_size, embed_dim]` variable `embeddings` at `ids` (TF1 contrib;
    scope "EmbedSequence"): a `[batch, length, embed_dim]` tensor for `[batch, length]` ids.

    Raises:
      ValueError: `vocab_size` or `embed_dim` missing when the variable is made.
    """
    if not (reuse or (vocab_size and embed_dim)):
        raise ValueError(
            "Must specify vocab size and embedding dimension when not reusing. Got "
            f"vocab_size={vocab_size} and embed_dim={embed_dim}"
        )
    del unique  # the same rows either way
    ids = core_ops.convert_to_tensor(ids)
    with variable_scope(scope, "EmbedSequence", [ids], reuse=reuse):
        shape = [vocab_size, embed_dim] if vocab_size and embed_dim else None
        embeddings = get_variable(
            "embeddings",
            shape=shape,
            initializer=initializer,
            regularizer=regularizer,
            trainable=trainable,
        )
        return embedding_lookup(embeddings, ids)
