"""TF1's `tf.contrib.layers`, the parts TF1 programs use most: `fully_connected`, `conv2d`,
`flatten`, `dropout`, `batch_norm`, `layer_norm`, `embed_sequence`, and the initializers and
regularizer they take (`xavier_initializer`, `variance_scaling_initializer`, `l2_regularizer`).

Each layer opens `variable_scope(scope, <TF1's default name>)` and makes its variables with
`get_variable` under TF1's names (`fully_connected/weights`, `fully_connected/biases`,
`Conv/weights`, `LayerNorm/gamma`, `EmbedSequence/embeddings`, ...), so TF1 checkpoints and
`reuse=True` find them. `batch_norm` follows TF 1.15's three paths and their numbers (see its
text).

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
from sluice._keras.optimizers.moving_averages import assign_moving_average
from sluice._tf1.cells.initializers import zeros_initializer
from sluice._tf1.cells.scopes import get_variable_scope, variable_scope
from sluice._tf1.cells.variable_store import get_variable
from sluice._tf1.contrib.framework import add_arg_scope
from sluice._tf1.layers import tf1_core
from sluice._tf1.layers.tf1_base import smart_cond, static_bool
from sluice._tf1.nn import embedding_lookup
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import (
    GraphKeys,
    Tensor,
    control_dependencies,
    get_default_graph,
    name_scope,
)
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.composite import nn_impl_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import (
    einsum_ops,
    math_ops,
    matmul_ops,
    reduction_ops,
    unary_ops,
)
from sluice.framework.ops.nn import conv_ops, loss_ops, nn_ops
from sluice.framework.ops.random import random_ops
from sluice.framework.variables import Variable


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
@add_arg_scope
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


@export("contrib.layers.dropout")
@add_arg_scope
def dropout(
    inputs: Any,
    keep_prob: Any = 0.5,
    noise_shape: Any = None,
    is_training: Any = True,
    outputs_collections: Any = None,
    scope: str | None = None,
    seed: int | None = None,
) -> Tensor:
    """TF1 contrib's dropout: keeps each element with probability `keep_prob` and scales it by
    `1 / keep_prob`, when `is_training` (a Python bool or a scalar bool Tensor; note the default
    True, where `tf.layers.dropout` defaults to False). Scope "Dropout"."""
    with variable_scope(scope, "Dropout", [inputs]) as sc:
        rate = 1 - keep_prob
        outputs = tf1_core.dropout(
            inputs, rate, noise_shape=noise_shape, seed=seed, training=is_training, name=sc.name
        )
        return _collect(outputs_collections, sc.name, outputs)


@export("contrib.layers.fully_connected")
@add_arg_scope
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
@add_arg_scope
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
@add_arg_scope
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
@add_arg_scope
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


# -- batch_norm ----------------------------------------------------------------------------------
_HALF = (dtypes.float16, dtypes.bfloat16)


def _collections_for(variables_collections: Any, name: str) -> list[str]:
    """TF1's `utils.get_variable_collections`: a dict maps a variable's name to its collections."""
    if isinstance(variables_collections, dict):
        variables_collections = variables_collections.get(name)
    if not variables_collections:
        return []
    return (
        [variables_collections]
        if isinstance(variables_collections, str)
        else list(variables_collections)
    )


def _model_variable(name, shape, dtype, initializer, regularizer, trainable, collections):
    """TF1's `contrib.framework.model_variable`: global, MODEL_VARIABLES and `collections`."""
    full = [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES]
    full += [c for c in collections if c not in full]
    return get_variable(
        name,
        shape=shape,
        dtype=dtype,
        initializer=initializer,
        regularizer=regularizer,
        trainable=trainable,
        collections=full,
    )


def _weighted_moments(x: Tensor, axes: list[int], weights: Tensor) -> tuple[Tensor, Tensor]:
    """TF1's `nn.weighted_moments` with keep_dims: the `weights`-weighted mean and variance."""
    weights = fill_ops.cast(weights, x.dtype)
    total = reduction_ops.reduce_sum(weights + fill_ops.zeros_like(x), axes, keepdims=True)
    divisor = unary_ops.reciprocal(total)
    mean = reduction_ops.reduce_sum(weights * x, axes, keepdims=True) * divisor
    distsq = reduction_ops.reduce_sum(
        weights * math_ops.squared_difference(x, mean), axes, keepdims=True
    )
    return mean, distsq * divisor


@export("contrib.layers.batch_norm")
@add_arg_scope
def batch_norm(
    inputs: Any,
    decay: float = 0.999,
    center: bool = True,
    scale: bool = False,
    epsilon: float = 0.001,
    activation_fn: Callable | None = None,
    param_initializers: dict | None = None,
    param_regularizers: dict | None = None,
    updates_collections: Any = GraphKeys.UPDATE_OPS,
    is_training: Any = True,
    reuse: Any = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    batch_weights: Any = None,
    fused: bool | None = None,
    data_format: str = "NHWC",
    zero_debias_moving_mean: bool = False,
    scope: str | None = None,
    renorm: bool = False,
    renorm_clipping: dict | None = None,
    renorm_decay: float = 0.99,
    adjustment: Callable | None = None,
) -> Tensor:
    """Batch normalization (Ioffe & Szegedy) over all axes but the channels' (the last for
    NHWC, axis 1 for NCHW), TF1 contrib's `batch_norm`: variable scope "BatchNorm", variables
    `beta` (when `center`), `gamma` (when `scale`; off by default, as in TF1), `moving_mean`,
    `moving_variance`, all model variables.

    Training (`is_training` True, or a bool Tensor that is true) normalizes with the batch mean
    and biased variance and moves the moving statistics towards them:
    `moving -= (moving - batch_stat) * (1 - decay)`. The update ops go to
    `updates_collections` (UPDATE_OPS: run them with the train op), or, with None, run before the
    output is produced (control dependencies). Inference uses the moving statistics.

    The numbers follow TF 1.15's paths. The fused path (`fused` None or True, rank 2 or 4, no
    `batch_weights`) moves `moving_variance` towards the *unbiased* batch variance (times
    n / (n - 1), n the elements per channel) and raises `epsilon` to at least 1.001e-5; the other
    paths (`fused=False`, other ranks, `batch_weights`) use the biased variance and `epsilon` as
    given. The normalized output is the same on all paths up to that epsilon.

    Args:
      inputs: a Tensor of rank 2 or more, batch first.
      decay: of the moving averages.
      center, scale: add `beta`, multiply by `gamma`.
      epsilon: added to the variance.
      activation_fn: applied to the output, or None.
      param_initializers: a dict of initializers by variable name (`beta`, `gamma`,
        `moving_mean`, `moving_variance`).
      param_regularizers: a dict of regularizers for `beta` and `gamma`.
      updates_collections: where the update ops go, or None to update in place.
      is_training: a Python bool or a scalar bool Tensor (then the graph holds a `cond`).
      reuse, scope: as `variable_scope`'s.
      variables_collections: a list of collections for every variable, or a dict by name.
      outputs_collections: collections the output is added to.
      trainable: whether `beta` and `gamma` are trainable.
      batch_weights: a `[batch]` Tensor of per-example weights for the moments.
      fused: None or True for the fused path where it applies, False for the plain one.
      data_format: "NHWC" or "NCHW".
      zero_debias_moving_mean: keep `moving_mean` as a debiased average (variables
        `moving_mean/biased` and `moving_mean/local_step`).
      renorm, renorm_clipping, renorm_decay, adjustment: batch renormalization and adjustment,
        which sluice does not implement.

    Raises:
      NotImplementedError: `renorm` or `adjustment`.
      ValueError: an unknown data_format, an unknown rank or channel dimension.

    >>> y = sl.contrib.layers.batch_norm(sl.ones([4, 3]), scale=True)
    >>> [v.op.name for v in sl.global_variables()]
    ['BatchNorm/beta', 'BatchNorm/gamma', 'BatchNorm/moving_mean', 'BatchNorm/moving_variance']
    """
    del renorm_clipping, renorm_decay
    if renorm:
        raise NotImplementedError(
            "contrib.layers.batch_norm: renorm=True (batch renormalization) is not implemented "
            "in sluice; use renorm=False."
        )
    if adjustment is not None:
        raise NotImplementedError(
            "contrib.layers.batch_norm: `adjustment` is not implemented in sluice."
        )
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    inputs = core_ops.convert_to_tensor(inputs)
    rank = inputs.shape.rank
    fused_path = (fused is None or fused) and batch_weights is None and rank in (2, 4)
    # TF1 builds the variables in the order of the path it takes: its Keras layer (default
    # updates_collections, no zero debias or batch weights, and not a fused rank-2 input) makes
    # gamma before beta; its other two paths beta before gamma.
    layer_order = (
        batch_weights is None
        and updates_collections is GraphKeys.UPDATE_OPS
        and not zero_debias_moving_mean
        and not (fused_path and rank == 2)
    )
    with variable_scope(scope, "BatchNorm", [inputs], reuse=reuse) as sc:
        if rank is None:
            raise ValueError(f"Inputs {inputs.name} has undefined rank.")
        if rank < 2:
            raise ValueError(
                f"contrib.layers.batch_norm: inputs {inputs.name} must have rank 2 or more, got "
                f"shape {inputs.shape}"
            )
        channel_axis = 1 if data_format == "NCHW" else rank - 1
        channels = inputs.shape[channel_axis]
        if channels is None:
            raise ValueError(
                f"Inputs {inputs.name} has undefined channels dimension {inputs.shape} "
                f"(axis {channel_axis}, {data_format})."
            )
        dtype = inputs.dtype.base_dtype
        var_dtype = dtypes.float32 if (fused_path or dtype in _HALF) else dtype
        inits = dict(param_initializers or {})
        regs = dict(param_regularizers or {})

        def param(name: str, default: Any, train: bool, regularizer: Any = None) -> Variable:
            return _model_variable(
                name, [channels], var_dtype, inits.get(name, default), regularizer,
                train, _collections_for(variables_collections, name),
            )  # fmt: skip

        made = {}
        for name in ("gamma", "beta") if layer_order else ("beta", "gamma"):
            if name == "beta" and center:
                made[name] = param("beta", zeros_initializer(), trainable, regs.get("beta"))
            if name == "gamma" and scale:
                made[name] = param("gamma", _ones, trainable, regs.get("gamma"))
        beta, gamma = made.get("beta"), made.get("gamma")
        with variable_scope(get_variable_scope()) as local:
            local.set_partitioner(None)  # TF1 never partitions the moving statistics
            moving_mean = param("moving_mean", zeros_initializer(), False)
            moving_variance = param("moving_variance", _ones, False)

        if fused_path:
            outputs = _fused_path(
                inputs, gamma, beta, moving_mean, moving_variance, decay, epsilon,
                updates_collections, is_training, data_format, zero_debias_moving_mean,
            )  # fmt: skip
        else:
            outputs = _plain_path(
                inputs, gamma, beta, moving_mean, moving_variance, decay, epsilon,
                updates_collections, is_training, data_format, zero_debias_moving_mean,
                batch_weights,
            )  # fmt: skip
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect(outputs_collections, sc.name, outputs)


def _moving_updates(moving_mean, moving_variance, mean, variance, decay, zero_debias):
    update_mean = assign_moving_average(moving_mean, mean, decay, zero_debias=zero_debias)
    update_variance = assign_moving_average(moving_variance, variance, decay, zero_debias=False)
    return update_mean, update_variance


def _in_collections(collections: Any, *tensors: Tensor) -> None:
    names = [collections] if isinstance(collections, str) else list(collections)
    for t in tensors:
        get_default_graph().add_to_collections(names, t)


def _fused_path(
    inputs, gamma, beta, moving_mean, moving_variance, decay, epsilon, updates_collections,
    is_training, data_format, zero_debias,
):  # fmt: skip
    """TF1's fused batch norm: `nn.fused_batch_norm` in training and in inference."""
    original = inputs
    channels = moving_mean.shape[0]
    if inputs.shape.rank == 2:
        shape4 = [-1, channels, 1, 1] if data_format == "NCHW" else [-1, 1, 1, channels]
        inputs = array_ops.reshape(inputs, shape4)
    dtype = inputs.dtype.base_dtype
    params = [fill_ops.ones([channels], dtypes.float32) if gamma is None else gamma,
              fill_ops.zeros([channels], dtypes.float32) if beta is None else beta]  # fmt: skip
    if dtype != dtypes.float32:  # sluice's fused_batch_norm takes parameters of x's dtype
        params = [fill_ops.cast(p, dtype) for p in params]

    def train():
        y, m, v = nn_impl_ops.fused_batch_norm(
            inputs, params[0], params[1], epsilon=epsilon, data_format=data_format
        )
        return y, fill_ops.cast(m, dtypes.float32), fill_ops.cast(v, dtypes.float32)

    def infer():
        y, _, _ = nn_impl_ops.fused_batch_norm(
            inputs, params[0], params[1], mean=fill_ops.cast(moving_mean, dtype),
            variance=fill_ops.cast(moving_variance, dtype), epsilon=epsilon,
            is_training=False, data_format=data_format,
        )  # fmt: skip
        return y, core_ops.identity(moving_mean), core_ops.identity(moving_variance)

    outputs, mean, variance = smart_cond(is_training, train, infer)
    if static_bool(is_training) is not False:
        if updates_collections is None:

            def force_updates():
                updates = _moving_updates(
                    moving_mean, moving_variance, mean, variance, decay, zero_debias
                )
                with control_dependencies(list(updates)):
                    return core_ops.identity(outputs)

            outputs = smart_cond(is_training, force_updates, lambda: outputs)
        else:
            update_mean, update_variance = smart_cond(
                is_training,
                lambda: _moving_updates(
                    moving_mean, moving_variance, mean, variance, decay, zero_debias
                ),
                lambda: (core_ops.identity(moving_mean), core_ops.identity(moving_variance)),
            )
            _in_collections(updates_collections, update_mean, update_variance)
    outputs.set_shape(inputs.shape)
    if original.shape.rank == 2:
        outputs = array_ops.reshape(outputs, fill_ops.shape(original))
    return outputs


def _plain_path(
    inputs, gamma, beta, moving_mean, moving_variance, decay, epsilon, updates_collections,
    is_training, data_format, zero_debias, batch_weights,
):  # fmt: skip
    """TF1's plain batch norm: `nn.moments` (or weighted moments) and `nn.batch_normalization`."""
    rank = inputs.shape.rank
    dtype = inputs.dtype.base_dtype
    if data_format == "NCHW":
        axes = [0] + list(range(2, rank))
        broadcast = [1, moving_mean.shape[0]] + [1] * (rank - 2)
    else:
        axes = list(range(rank - 1))
        broadcast = None
    if batch_weights is not None:
        batch_weights = core_ops.convert_to_tensor(batch_weights)
        if not inputs.shape[:1].is_compatible_with(batch_weights.shape):
            raise ValueError(
                f"contrib.layers.batch_norm: batch_weights of shape {batch_weights.shape} do not "
                f"match the batch of inputs {inputs.shape}"
            )
        batch_weights = array_ops.reshape(batch_weights, [-1] + [1] * (rank - 1))

    def stat(t):  # the statistics in the inputs' dtype
        return t if t.dtype == dtype else fill_ops.cast(t, dtype)

    if static_bool(is_training) is not False:
        if batch_weights is None:
            mean, variance = nn_impl_ops.moments(inputs, axes, keep_dims=True)
        else:
            mean, variance = _weighted_moments(inputs, axes, batch_weights)
        mean = array_ops.reshape(mean, [-1])
        variance = array_ops.reshape(variance, [-1])
        if moving_mean.dtype != dtype:
            mean_v, variance_v = (fill_ops.cast(t, moving_mean.dtype) for t in (mean, variance))
        else:
            mean_v, variance_v = mean, variance

        def moving():
            return stat(core_ops.identity(moving_mean)), stat(core_ops.identity(moving_variance))

        if updates_collections is None:

            def force_updates():
                updates = _moving_updates(
                    moving_mean, moving_variance, mean_v, variance_v, decay, zero_debias
                )
                with control_dependencies(list(updates)):
                    return core_ops.identity(mean), core_ops.identity(variance)

            mean, variance = smart_cond(is_training, force_updates, moving)
        else:
            update_mean, update_variance = smart_cond(
                is_training,
                lambda: _moving_updates(
                    moving_mean, moving_variance, mean_v, variance_v, decay, zero_debias
                ),
                lambda: (core_ops.identity(moving_mean), core_ops.identity(moving_variance)),
            )
            _in_collections(updates_collections, update_mean, update_variance)
            batch = (mean, variance)
            mean, variance = smart_cond(is_training, lambda: batch, moving)
    else:
        mean, variance = stat(moving_mean.value()), stat(moving_variance.value())
    if gamma is not None:
        gamma = stat(gamma.value())
    if beta is not None:
        beta = stat(beta.value())
    if broadcast is not None:
        mean, variance = (array_ops.reshape(t, broadcast) for t in (mean, variance))
        gamma = None if gamma is None else array_ops.reshape(gamma, broadcast)
        beta = None if beta is None else array_ops.reshape(beta, broadcast)
    outputs = nn_impl_ops.batch_normalization(inputs, mean, variance, beta, gamma, epsilon)
    outputs.set_shape(inputs.shape)
    return outputs
