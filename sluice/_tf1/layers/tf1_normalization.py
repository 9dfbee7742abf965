"""TF1's functional batch normalization, `sl.layers.batch_normalization` (TF 1.15's
`tf.layers.batch_normalization`). Scopes and weight names: see `tf1_base`.

What a TF1 program relies on, reproduced here:

* variables `<scope>/gamma`, `beta` (trainable), `moving_mean`, `moving_variance` (global, not
  trainable), created in that order;
* `training` (a bool or a bool Tensor) picks the batch statistics or the moving ones; the
  moving averages are updated by ops put in the UPDATE_OPS collection, which run only when the
  user makes the train op depend on them:
  `moving -= (moving - batch_stat) * (1 - momentum)`, i.e.
  `moving = momentum * moving + (1 - momentum) * batch_stat`;
* 4-D inputs normalized over axis 1 or 3 take the fused path (TF1's default, `fused=None`):
  the moving variance is updated with the *unbiased* batch variance (n / (n - 1), n the
  elements per channel), while other inputs (the plain path, or `fused=False`) use the biased
  one, as in TF1. The normalized output uses the biased variance in both;
* with a bool Tensor `training`, the updates use momentum 1 when it is false, so they leave the
  moving averages as they are (TF1's fused layer does so; its plain path puts each update in a
  `cond` instead: the values are the same).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice._export import export
from sluice._tf1.cells.initializers import ones_initializer, zeros_initializer
from sluice._tf1.layers import tf1_base
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys, Tensor
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.composite import nn_impl_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.variables import Variable

_HALF = (dtypes.float16, dtypes.bfloat16)


def _axes(axis: Any, ndims: int) -> list[int]:
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = []
    for a in axes:
        if not isinstance(a, int) or not -ndims <= a < ndims:
            raise ValueError(f"batch_normalization: Invalid axis: {a} (inputs of rank {ndims})")
        a = a + ndims if a < 0 else a
        if a in out:
            raise ValueError(f"batch_normalization: Duplicate axis: {axes}")
        out.append(a)
    return out


def _assign_moving_average(variable: Variable, value: Tensor, momentum: Any) -> Tensor:
    """`variable -= (variable - value) * (1 - momentum)`, TF1's AssignMovingAvg."""
    with graph_lib.name_scope("AssignMovingAvg"):
        decay = fill_ops.cast(
            core_ops.convert_to_tensor(1.0 - momentum, name="decay"), variable.dtype
        )
        delta = (variable - fill_ops.cast(value, variable.dtype)) * decay
        return variable.assign_sub(delta)


@export("layers.batch_normalization")
def batch_normalization(
    inputs: Any,
    axis: int | list[int] = -1,
    momentum: float = 0.99,
    epsilon: float = 1e-3,
    center: bool = True,
    scale: bool = True,
    beta_initializer: Any = zeros_initializer(),
    gamma_initializer: Any = ones_initializer(),
    moving_mean_initializer: Any = zeros_initializer(),
    moving_variance_initializer: Any = ones_initializer(),
    beta_regularizer: Callable | None = None,
    gamma_regularizer: Callable | None = None,
    beta_constraint: Callable | None = None,
    gamma_constraint: Callable | None = None,
    training: Any = False,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
    renorm: bool = False,
    renorm_clipping: Any = None,
    renorm_momentum: float = 0.99,
    fused: bool | None = None,
    virtual_batch_size: int | None = None,
    adjustment: Callable | None = None,
) -> Tensor:
    """Batch normalization (TF1 `tf.layers.batch_normalization`; see the module docstring).

    Args:
      inputs: a floating Tensor of known rank, its `axis` dimensions known.
      axis: the features axis (or list of axes) kept; the others are reduced.
      momentum: of the moving averages.
      epsilon: added to the variance.
      center, scale: create and use `beta` / `gamma`.
      beta_initializer, gamma_initializer, moving_mean_initializer,
        moving_variance_initializer: the variables' initializers.
      beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint: as in `dense`.
      training: a Python bool or a scalar bool Tensor (default False: inference, as in TF1).
      trainable: adds gamma and beta to TRAINABLE_VARIABLES.
      name: the variable scope (default: a fresh `batch_normalization`, ...).
      reuse: reuse the variables of the scope `name`.
      fused: None or True: the fused path where it applies (4-D, axis 1 or 3); False: never.
      renorm, renorm_clipping, renorm_momentum, virtual_batch_size, adjustment: only their
        defaults are supported.

    Returns:
      The normalized Tensor, of `inputs`' shape and dtype.

    Raises:
      ValueError: an unknown rank, a bad axis, or an unknown `axis` dimension.
      NotImplementedError: batch renormalization, virtual batches or an adjustment.

    >>> x = sl.placeholder(sl.float32, [None, 3])
    >>> y = sl.layers.batch_normalization(x, training=True)
    >>> [v.name for v in sl.global_variables()]  # doctest: +NORMALIZE_WHITESPACE
    ['batch_normalization/gamma:0', 'batch_normalization/beta:0',
     'batch_normalization/moving_mean:0', 'batch_normalization/moving_variance:0']
    >>> len(sl.get_collection(sl.GraphKeys.UPDATE_OPS))
    2
    """
    del renorm_clipping, renorm_momentum
    for what, value in (
        ("renorm", renorm),
        ("virtual_batch_size", virtual_batch_size),
        ("adjustment", adjustment),
    ):
        if value:
            raise NotImplementedError(
                f"batch_normalization: {what}={value!r} is not supported by sluice; only the "
                "default (plain batch normalization) is."
            )
    with tf1_base.layer_scope(name, "batch_normalization", reuse):
        inputs = core_ops.convert_to_tensor(inputs, name="inputs")
        tf1_base.float_dtype(inputs, "BatchNormalization")
        ndims = inputs.shape.rank
        if ndims is None:
            raise ValueError(f"batch_normalization: Input has undefined rank: {inputs.shape}")
        axes = _axes(axis, ndims)
        dims = inputs.shape.as_list()
        if any(dims[a] is None for a in axes):
            raise ValueError(
                f"batch_normalization: Input has undefined `axis` dimension. Input shape: "
                f"{inputs.shape}, axis {axis}"
            )
        param_shape = (
            [dims[axes[0]]]
            if len(axes) == 1
            else [dims[i] if i in axes else 1 for i in range(ndims)]
        )
        param_dtype = dtypes.float32 if inputs.dtype in _HALF else inputs.dtype

        def weight(wname, init, reg=None, con=None, train=trainable) -> Variable:
            return tf1_base.add_weight(wname, param_shape, param_dtype, init, reg, con, train)

        gamma = (
            weight("gamma", gamma_initializer, gamma_regularizer, gamma_constraint)
            if scale
            else None
        )
        beta = (
            weight("beta", beta_initializer, beta_regularizer, beta_constraint) if center else None
        )
        moving_mean = weight("moving_mean", moving_mean_initializer, train=False)
        moving_variance = weight("moving_variance", moving_variance_initializer, train=False)
        variables = (gamma, beta, moving_mean, moving_variance)
        use_fused = fused is not False and ndims == 4 and axes in ([1], [3])
        if use_fused:
            outputs, updates = _fused(
                inputs, axes[0], variables, param_shape, param_dtype, momentum, epsilon, training
            )
        else:
            outputs, updates = _plain(inputs, axes, variables, momentum, epsilon, training)
        for update in updates:
            graph_lib.add_to_collection(GraphKeys.UPDATE_OPS, update)
        return outputs


def _fused(inputs, axis, variables, param_shape, param_dtype, momentum, epsilon, training):
    gamma, beta, moving_mean, moving_variance = variables
    gamma = gamma if gamma is not None else fill_ops.ones(param_shape, param_dtype)
    beta = beta if beta is not None else fill_ops.zeros(param_shape, param_dtype)
    fmt = "NCHW" if axis == 1 else "NHWC"
    x = fill_ops.cast(inputs, param_dtype) if inputs.dtype != param_dtype else inputs

    def train():
        return nn_impl_ops.fused_batch_norm(x, gamma, beta, epsilon=epsilon, data_format=fmt)

    def infer():
        return nn_impl_ops.fused_batch_norm(
            x, gamma, beta, mean=moving_mean, variance=moving_variance, epsilon=epsilon,
            is_training=False, data_format=fmt,
        )  # fmt: skip

    output, mean, variance = tf1_base.smart_cond(training, train, infer)
    if output.dtype != inputs.dtype:
        output = fill_ops.cast(output, inputs.dtype)
    return output, _updates(training, moving_mean, moving_variance, mean, variance, momentum)


def _updates(training, moving_mean, moving_variance, mean, variance, momentum) -> list[Tensor]:
    """The two AssignMovingAvg ops, or none when `training` is False. With a bool Tensor, the
    momentum is 1 when it is false (TF1's fused layer does so), and `mean`/`variance` are then
    the moving statistics themselves: the update adds exactly 0."""
    known = tf1_base.static_bool(training)
    if known is False:
        return []
    if known is None:
        dtype = moving_mean.dtype
        momentum = tf1_base.smart_cond(
            training,
            lambda: core_ops.constant(momentum, dtype),
            lambda: core_ops.constant(1.0, dtype),
        )
    return [
        _assign_moving_average(moving_mean, mean, momentum),
        _assign_moving_average(moving_variance, variance, momentum),
    ]


def _plain(inputs, axes, variables, momentum, epsilon, training):
    gamma, beta, moving_mean, moving_variance = variables
    ndims = inputs.shape.rank
    reduction = [i for i in range(ndims) if i not in axes]
    broadcast_shape = [1] * ndims
    broadcast_shape[axes[0]] = inputs.shape[axes[0]]

    def broadcast(v):  # a 1-D parameter of a features axis that is not the last one
        if v is not None and v.shape.rank != ndims and reduction != list(range(ndims - 1)):
            return array_ops.reshape(v, broadcast_shape)
        return v

    if tf1_base.static_bool(training) is False:
        mean, variance = moving_mean, moving_variance
    else:
        param_dtype = moving_mean.dtype
        x = fill_ops.cast(inputs, param_dtype) if inputs.dtype != param_dtype else inputs
        batch_mean, batch_variance = nn_impl_ops.moments(x, reduction, keep_dims=len(axes) > 1)
        mean = tf1_base.smart_cond(
            training, lambda: batch_mean, lambda: core_ops.convert_to_tensor(moving_mean)
        )
        variance = tf1_base.smart_cond(
            training, lambda: batch_variance, lambda: core_ops.convert_to_tensor(moving_variance)
        )
    updates = _updates(training, moving_mean, moving_variance, mean, variance, momentum)

    def cast(v):  # statistics and parameters in the inputs' dtype (float16 inputs)
        return v if v is None else fill_ops.cast(v, inputs.dtype)

    outputs = nn_impl_ops.batch_normalization(
        inputs, broadcast(cast(mean)), broadcast(cast(variance)), broadcast(cast(beta)),
        broadcast(cast(gamma)), epsilon,
    )  # fmt: skip
    outputs.set_shape(inputs.shape)
    return outputs, updates
