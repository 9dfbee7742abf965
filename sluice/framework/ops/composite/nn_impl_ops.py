"""TF1's `nn_impl` functions built from other ops, as TF1 builds them: moments, batch
normalization (plain and fused), l2_normalize, weighted and Poisson losses, zero_fraction.

No op is registered here: each function composes math ops, so gradients come from theirs.
`fused_batch_norm` is one kernel in TF1 (FusedBatchNorm); here it is the same arithmetic composed,
with TF1's gradient contract kept by `stop_gradient` where its gradient ignores a path (the
returned batch statistics, and the given mean/variance in inference).
"""

from __future__ import annotations

import math
from typing import Any

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.array.gather_ops import where_v2
from sluice.framework.ops.core.core_ops import convert_to_tensor, identity, stop_gradient
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops
from sluice.framework.ops.nn.nn_ops import axis_arg, relu


def _keep_dims_arg(keep_dims: bool | None, keepdims: bool | None) -> bool:
    if keep_dims is not None and keepdims is not None:
        raise ValueError("give at most one of keep_dims and keepdims (its new name)")
    return bool(keep_dims if keep_dims is not None else keepdims)


@export("nn.moments")
def moments(
    x: Any,
    axes: Any,
    shift: Any = None,
    name: str | None = None,
    keep_dims: bool | None = None,
    keepdims: bool | None = None,
) -> tuple[Tensor, Tensor]:
    """The mean and variance of `x` over `axes` (TF1 `tf.nn.moments`).

    As TF1: `mean = reduce_mean(x, axes)`, `variance = reduce_mean((x - stop_gradient(mean))**2)`
    (the biased variance); float16 inputs are reduced in float32 and cast back. `shift` is
    accepted and unused, as in TF1.

    Args:
      x: a Tensor.
      axes: the axes to reduce (a list of ints).
      shift: unused (TF1 compatibility).
      name: the name scope.
      keep_dims: keep the reduced axes with size 1 (`keepdims` is its new name).

    Returns:
      `(mean, variance)`, two Tensors.

    >>> mean, var = moments(sl.constant([[1.0, 2.0], [3.0, 6.0]]), axes=[0])
    >>> [v.tolist() for v in sl.Session().run([mean, var])]
    [[2.0, 4.0], [1.0, 4.0]]
    """
    keep = _keep_dims_arg(keep_dims, keepdims)
    with graph_lib.name_scope(name, "moments", [x, axes]):
        x = convert_to_tensor(x, name="x")
        y = fill_ops.cast(x, dtypes.float32) if x.dtype == dtypes.float16 else x
        axes = list(axes) if isinstance(axes, (list, tuple)) else axes
        mean = reduction_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        variance = reduction_ops.reduce_mean(
            math_ops.squared_difference(y, stop_gradient(mean)),
            axes,
            keepdims=True,
            name="variance",
        )
        if not keep:
            mean = array_ops.squeeze(mean, axes)
            variance = array_ops.squeeze(variance, axes)
        if x.dtype == dtypes.float16:
            return fill_ops.cast(mean, x.dtype), fill_ops.cast(variance, x.dtype)
        return mean, variance


@export("nn.batch_normalization")
def batch_normalization(
    x: Any,
    mean: Any,
    variance: Any,
    offset: Any,
    scale: Any,
    variance_epsilon: float,
    name: str | None = None,
) -> Tensor:
    """`scale * (x - mean) / sqrt(variance + variance_epsilon) + offset` (TF1
    `tf.nn.batch_normalization`), computed as TF1 does: `x * inv + (offset - mean * inv)` with
    `inv = scale * rsqrt(variance + variance_epsilon)`.

    Args:
      x: a Tensor.
      mean, variance: Tensors broadcastable to `x`.
      offset, scale: Tensors broadcastable to `x`, or None (0 and 1).
      variance_epsilon: a small float added to the variance.
      name: the name scope.

    >>> y = batch_normalization(sl.constant([1.0, 3.0]), 2.0, 1.0, None, None, 0.0)
    >>> sl.Session().run(y).tolist()
    [-1.0, 1.0]
    """
    with graph_lib.name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        x = convert_to_tensor(x, name="x")
        mean = convert_to_tensor(mean, dtype=x.dtype, name="mean")
        variance = convert_to_tensor(variance, dtype=x.dtype, name="variance")
        inv = unary_ops.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv = inv * convert_to_tensor(scale, dtype=x.dtype, name="scale")
        if offset is not None:
            shift = convert_to_tensor(offset, dtype=x.dtype, name="offset") - mean * inv
        else:
            shift = -mean * inv
        return x * inv + shift


_FUSED_MIN_EPSILON = 1.001e-5  # TF1 raises smaller epsilons to this (cuDNN's limit)


@export("nn.fused_batch_norm")
def fused_batch_norm(
    x: Any,
    scale: Any,
    offset: Any,
    mean: Any = None,
    variance: Any = None,
    epsilon: float = 0.001,
    data_format: str = "NHWC",
    is_training: bool = True,
    name: str | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Batch normalization of a 4-D `x` over its batch and spatial axes (TF1
    `tf.nn.fused_batch_norm`).

    Training: `y` is normalized with the batch mean and the biased batch variance; the returned
    `batch_var` is the unbiased one (times n / (n - 1), n = elements per channel), as TF1's
    FusedBatchNorm kernel returns it for moving averages. Inference: `y` uses the given `mean`
    and `variance`, which are returned unchanged. As TF1's gradient, no gradient flows through
    the returned statistics, nor into `mean`/`variance` in inference. `epsilon` is raised to at
    least 1.001e-5, as in TF1.

    Args:
      x: a 4-D floating Tensor.
      scale, offset: 1-D Tensors with one entry per channel.
      mean, variance: 1-D Tensors, required when `is_training` is False.
      epsilon: added to the variance.
      data_format: "NHWC" or "NCHW".
      is_training: normalize with the batch statistics (True) or the given ones.
      name: the name scope.

    Returns:
      `(y, batch_mean, batch_var)`.

    Raises:
      ValueError: `x` is not 4-D, a per-channel input is not 1-D of the channel count, an unknown
        data_format, or `mean`/`variance` missing in inference.
    """
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(
            f"fused_batch_norm: data_format must be 'NHWC' or 'NCHW', got {data_format!r}"
        )
    if not is_training and (mean is None or variance is None):
        raise ValueError(
            "fused_batch_norm: both 'mean' and 'variance' must be a 1D tensor when is_training "
            "is False."
        )
    epsilon = max(float(epsilon), _FUSED_MIN_EPSILON)
    with graph_lib.name_scope(name, "FusedBatchNorm", [x, scale, offset]):
        x = convert_to_tensor(x, name="x")
        if x.shape.rank not in (None, 4):
            raise ValueError(f"fused_batch_norm: x must be 4-dimensional, got shape {x.shape}")
        channel = 1 if data_format == "NCHW" else 3
        axes = [0, 2, 3] if data_format == "NCHW" else [0, 1, 2]
        channels = x.shape[channel] if x.shape.rank is not None else None
        per_channel = {"scale": scale, "offset": offset}
        if not is_training:
            per_channel.update(mean=mean, variance=variance)
        converted = {}
        for what, value in per_channel.items():
            t = convert_to_tensor(value, dtype=x.dtype, name=what)
            if t.shape.rank not in (None, 1) or (
                channels is not None and t.shape.rank == 1 and t.shape[0] not in (None, channels)
            ):
                raise ValueError(
                    f"fused_batch_norm: {what} must be a 1-D tensor of {channels} entries (one per "
                    f"channel of x, shape {x.shape}, {data_format}), got shape {t.shape}"
                )
            converted[what] = t
        bshape = [1, -1, 1, 1] if data_format == "NCHW" else [1, 1, 1, -1]

        def per_channel_view(t: Tensor) -> Tensor:
            return array_ops.reshape(t, bshape)

        if is_training:
            batch_mean = reduction_ops.reduce_mean(x, axes)
            centered = x - per_channel_view(batch_mean)
            batch_variance = reduction_ops.reduce_mean(unary_ops.square(centered), axes)
            n = fill_ops.cast(fill_ops.size(x), x.dtype) / fill_ops.cast(
                fill_ops.size(batch_mean), x.dtype
            )
            unbiased = batch_variance * n / math_ops.maximum(n - 1, 1)
            out_mean, out_var = stop_gradient(batch_mean), stop_gradient(unbiased)
        else:
            batch_mean = stop_gradient(converted["mean"])
            batch_variance = stop_gradient(converted["variance"])
            centered = x - per_channel_view(batch_mean)
            out_mean, out_var = converted["mean"], converted["variance"]
        inv = unary_ops.rsqrt(batch_variance + epsilon) * converted["scale"]
        y = centered * per_channel_view(inv) + per_channel_view(converted["offset"])
        return y, out_mean, out_var


@export("linalg.l2_normalize", "math.l2_normalize", "nn.l2_normalize")
def l2_normalize(
    x: Any,
    axis: Any = None,
    epsilon: float = 1e-12,
    name: str | None = None,
    dim: Any = None,
) -> Tensor:
    """`x / sqrt(max(sum(x**2, axis), epsilon))` (TF1 `tf.nn.l2_normalize`; `dim` is the
    deprecated name of `axis`, which may be a list; None normalizes over every axis).

    >>> sl.Session().run(l2_normalize(sl.constant([3.0, 4.0]), 0)).tolist()
    [0.6000000238418579, 0.800000011920929]
    """
    if axis is None and dim is None:
        axis = None  # TF1 reduces over every axis
    elif isinstance(axis, (list, tuple)) or isinstance(dim, (list, tuple)):
        if axis is not None and dim is not None:
            raise ValueError("give at most one of axis and dim (its deprecated name)")
        axis = list(axis if axis is not None else dim)
    else:
        axis = axis_arg(axis, dim)
    with graph_lib.name_scope(name, "l2_normalize", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        square_sum = reduction_ops.reduce_sum(unary_ops.square(x), axis, keepdims=True)
        inv_norm = unary_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, inv_norm, name=scope)


@export("nn.weighted_cross_entropy_with_logits")
def weighted_cross_entropy_with_logits(
    targets: Any = None,
    logits: Any = None,
    pos_weight: Any = None,
    name: str | None = None,
    labels: Any = None,
) -> Tensor:
    """Sigmoid cross-entropy with the positive term weighted by `pos_weight` (TF1
    `tf.nn.weighted_cross_entropy_with_logits`; `labels` is TF2's name for `targets`):
    `(1 - z) * x + (1 + (q - 1) * z) * (log1p(exp(-|x|)) + max(-x, 0))`.

    Raises:
      ValueError: targets and logits of different shapes, or neither/both of targets and labels.
    """
    if (targets is None) == (labels is None):
        raise ValueError(
            "weighted_cross_entropy_with_logits: give exactly one of targets and labels"
        )
    if logits is None or pos_weight is None:
        raise ValueError("weighted_cross_entropy_with_logits needs logits and pos_weight")
    with graph_lib.name_scope(name, "logistic_loss", [logits, targets]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        targets = convert_to_tensor(
            targets if labels is None else labels, dtype=logits.dtype, name="targets"
        )
        if not logits.shape.is_compatible_with(targets.shape):
            raise ValueError(
                f"weighted_cross_entropy_with_logits: logits and targets must have the same "
                f"shape ({logits.shape} vs {targets.shape})"
            )
        log_weight = 1 + (pos_weight - 1) * targets
        softplus_neg = unary_ops.log1p(unary_ops.exp(-unary_ops.abs(logits))) + relu(-logits)
        return math_ops.add((1 - targets) * logits, log_weight * softplus_neg, name=scope)


@export("nn.log_poisson_loss")
def log_poisson_loss(
    targets: Any, log_input: Any, compute_full_loss: bool = False, name: str | None = None
) -> Tensor:
    """The negative log-likelihood of `targets` under a Poisson of mean `exp(log_input)`, up to
    a constant (TF1 `tf.nn.log_poisson_loss`): `exp(log_input) - log_input * targets`, plus the
    Stirling approximation of `log(targets!)` where `targets > 1` when `compute_full_loss`.

    Raises:
      ValueError: targets and log_input of different shapes.
    """
    with graph_lib.name_scope(name, "log_poisson_loss", [log_input, targets]) as scope:
        log_input = convert_to_tensor(log_input, name="log_input")
        targets = convert_to_tensor(targets, dtype=log_input.dtype, name="targets")
        if not log_input.shape.is_compatible_with(targets.shape):
            raise ValueError(
                f"log_poisson_loss: log_input and targets must have the same shape "
                f"({log_input.shape} vs {targets.shape})"
            )
        result = unary_ops.exp(log_input) - log_input * targets
        if not compute_full_loss:
            return identity(result, name=scope)
        stirling = (
            targets * unary_ops.log(targets) - targets + 0.5 * unary_ops.log(2 * math.pi * targets)
        )
        in_01 = math_ops.logical_and(
            math_ops.greater_equal(targets, 0), math_ops.less_equal(targets, 1)
        )
        return math_ops.add(
            result, where_v2(in_01, fill_ops.zeros_like(targets), stirling), name=scope
        )


@export("nn.zero_fraction")
def zero_fraction(value: Any, name: str | None = None) -> Tensor:
    """The fraction of zeros in `value`, a float32 scalar (TF1 `tf.nn.zero_fraction`).

    >>> float(sl.Session().run(zero_fraction(sl.constant([0.0, 1.0, 0.0, 2.0]))))
    0.5
    """
    with graph_lib.name_scope(name, "zero_fraction", [value]):
        value = convert_to_tensor(value, name="value")
        is_zero = fill_ops.cast(math_ops.equal(value, 0), dtypes.float32)
        return reduction_ops.reduce_mean(is_zero, name="fraction")
