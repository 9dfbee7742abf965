"""Loss ops: softmax, sparse softmax and sigmoid cross-entropies, L2Loss (TF1 `tf.nn`).

SoftmaxCrossEntropyWithLogits and SparseSoftmaxCrossEntropyWithLogits have TF's two outputs, the
loss and its gradient with respect to the logits (`backprop`), and accept any rank: the first
carries an `axis` attr, the second takes labels shaped like the logits without their last axis.
`SigmoidCrossEntropyWithLogits` is sluice's own op (TF1 composes it from math ops). Every loss is
computed from log-softmax or log1p terms, so large logits never overflow.

Gradients follow TF: the logits' gradient of a softmax cross-entropy is `grad_loss * backprop`
(plus softmax's gradient of whatever flows into `backprop` itself), the v2 loss's labels get
`-grad_loss * log_softmax(logits)`, and sparse integer labels get none.

A sparse label outside `[0, num_classes)` fails the run with `InvalidArgumentError`, as TF's CPU
kernel does, in both engines (the op's `registry.Check`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import Check, register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, broadcast_ops, fill_ops
from sluice.framework.ops.core.core_ops import apply_op, convert_n, convert_to_tensor, stop_gradient
from sluice.framework.ops.core.shape_rules import constant_value, require_dtype, require_same_dtype
from sluice.framework.ops.math import reduction_ops, unary_ops
from sluice.framework.ops.nn import nn_ops
from sluice.framework.ops.nn.nn_ops import axis_arg, check_axis


# -- SoftmaxCrossEntropyWithLogits --------------------------------------------------------------
def _softmax_xent_infer(op) -> list:
    features, labels = op.inputs
    require_dtype(features, "floating", dtypes.is_floating)
    require_same_dtype(features, labels)
    if not features.shape.is_compatible_with(labels.shape):
        raise ValueError(
            f"logits and labels must have the same shape, got {features.shape} and {labels.shape}"
        )
    shape = features.shape.merge_with(labels.shape)
    if shape.rank == 0:
        raise ValueError("logits must have rank >= 1, got a scalar")
    axis = op.get_attr("axis")
    check_axis(features, axis)
    if shape.rank is None:
        return [(features.dtype, shape), (features.dtype, shape)]
    dims = shape.as_list()
    del dims[axis]
    return [(features.dtype, TensorShape(dims)), (features.dtype, shape)]


def _softmax_xent_kernel(features, labels, *, axis):
    log_probs = jax.nn.log_softmax(features, axis)
    loss = -jnp.sum(labels * log_probs, axis=axis)
    return loss, jnp.exp(log_probs) - labels


register_op("SoftmaxCrossEntropyWithLogits", infer=_softmax_xent_infer, kernel=_softmax_xent_kernel)


def _is_zero(t: Tensor) -> bool:
    """Whether `t` is statically all zeros (the walk's stand-in for an unused output's grad)."""
    if t.op.type == "ZerosLike":
        return True
    if t.op.type == "Fill":
        t = t.op.inputs[1]
    value = constant_value(t)
    return value is not None and not np.any(value)


def _xent_logits_grad(op, grad_loss: Tensor, grad_backprop: Tensor, axis: int) -> Tensor:
    """The logits' gradient of both outputs of a softmax cross-entropy: the loss's gradient is
    the `backprop` output, and `backprop = softmax(logits) - labels` has softmax's gradient."""
    grad = array_ops.expand_dims(grad_loss, axis) * op.outputs[1]
    if not _is_zero(grad_backprop):
        probs = nn_ops.softmax(op.inputs[0], axis)
        inner = reduction_ops.reduce_sum(grad_backprop * probs, axis, keepdims=True)
        grad = grad + (grad_backprop - inner) * probs
    return grad


@register_gradient("SoftmaxCrossEntropyWithLogits")
def _softmax_xent_grad(op, grad_loss, grad_backprop):
    """Labels get `-grad_loss * log_softmax(logits)` (the v2 loss trains them, as in TF), and
    `-grad_backprop` from the `backprop` output."""
    axis = op.get_attr("axis")
    grad_labels = array_ops.expand_dims(grad_loss, axis) * -nn_ops.log_softmax(op.inputs[0], axis)
    if not _is_zero(grad_backprop):
        grad_labels = grad_labels - grad_backprop
    return [_xent_logits_grad(op, grad_loss, grad_backprop, axis), grad_labels]


@export("nn.softmax_cross_entropy_with_logits_v2")
def softmax_cross_entropy_with_logits_v2(
    labels: Any,
    logits: Any,
    axis: int | None = None,
    name: str | None = None,
    dim: int | None = None,
) -> Tensor:
    """Cross-entropy between `softmax(logits)` and the distributions `labels`, along `axis`.

    Gradients flow into both `logits` and `labels`.

    Args:
      labels: probabilities (each slice along `axis` sums to 1), shaped like `logits`.
      logits: unnormalized log-probabilities.
      axis: the class axis, the last by default (`dim` is its deprecated name).
      name: a name for the operation.

    Returns:
      The loss, shaped like `logits` without `axis`.
    """
    logits = convert_to_tensor(logits)
    labels = labels if isinstance(labels, Tensor) else convert_n([logits, labels])[1]
    if labels.dtype != logits.dtype and dtypes.is_floating(logits.dtype):
        labels = fill_ops.cast(labels, logits.dtype)  # TF1 casts labels to the logits' dtype
    axis = axis_arg(axis, dim)
    if not logits.shape.is_compatible_with(labels.shape):
        labels = _labels_as_rows_of(labels, logits, axis)
    op = apply_op("SoftmaxCrossEntropyWithLogits", [logits, labels], {"axis": axis}, name)
    return op.outputs[0]


def _labels_as_rows_of(labels: Tensor, logits: Tensor, axis: int) -> Tensor:
    """Labels shaped otherwise than the logits, as TF1 takes them: TF1 flattens both to
    [rows, classes] before its kernel (which also broadcasts one row of labels to all), so labels
    of another outer shape with the same rows, or a single row, are valid. Anything else keeps the
    op's shape error."""
    rank, classes = logits.shape.rank, logits.shape[-1]
    last_axis = rank is not None and axis in (-1, rank - 1)
    label_classes = labels.shape[-1] if labels.shape.rank else None
    if not last_axis or labels.shape.rank in (None, 0) or classes is None or label_classes is None:
        return labels
    if classes != label_classes:
        return labels
    count = labels.shape.num_elements()
    if count == classes:  # one row of labels: the kernel's broadcast
        return broadcast_ops.broadcast_to(
            array_ops.reshape(labels, [classes]), fill_ops.shape(logits)
        )
    return array_ops.reshape(labels, fill_ops.shape(logits))


@export("nn.softmax_cross_entropy_with_logits")
def softmax_cross_entropy_with_logits(
    _sentinel: Any = None,
    labels: Any = None,
    logits: Any = None,
    dim: int = -1,
    name: str | None = None,
    axis: int | None = None,
) -> Tensor:
    """Like `softmax_cross_entropy_with_logits_v2`, but no gradient flows into `labels` (TF1).
    Call it with keyword arguments only."""
    if _sentinel is not None or labels is None or logits is None:
        raise ValueError("call softmax_cross_entropy_with_logits with labels=..., logits=...")
    with graph_lib.name_scope(name, "softmax_cross_entropy_with_logits_sg", [logits, labels]) as s:
        labels = stop_gradient(labels, name="labels_stop_gradient")
        return softmax_cross_entropy_with_logits_v2(
            labels, logits, axis=dim if axis is None else axis, name=s
        )


# -- SparseSoftmaxCrossEntropyWithLogits --------------------------------------------------------
def _sparse_xent_infer(op) -> list:
    features, labels = op.inputs
    require_dtype(features, "floating", dtypes.is_floating)
    if labels.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"labels must be int32 or int64, got {labels.dtype.name}")
    logits_rank, labels_rank = features.shape.rank, labels.shape.rank
    if logits_rank == 0:
        raise ValueError("logits must have rank >= 1, got a scalar")
    if logits_rank is not None and labels_rank is not None and labels_rank != logits_rank - 1:
        raise ValueError(
            f"labels must have rank {logits_rank - 1} (the rank of logits minus 1), got shape "
            f"{labels.shape} for logits of shape {features.shape}"
        )
    if logits_rank is None:
        return [(features.dtype, labels.shape), (features.dtype, TensorShape(None))]
    batch = features.shape[:-1]
    if not batch.is_compatible_with(labels.shape):
        raise ValueError(
            f"labels of shape {labels.shape} do not match logits of shape {features.shape}: "
            "labels must have the shape of logits without its last dimension"
        )
    batch = batch.merge_with(labels.shape)
    return [(features.dtype, batch), (features.dtype, batch.concatenate(features.shape[-1:]))]


def _sparse_xent_kernel(features, labels):
    """Out-of-range labels give NaN (TF's GPU kernel); the op's Check raises on them first."""
    num_classes = features.shape[-1]
    valid = (labels >= 0) & (labels < num_classes)
    log_probs = jax.nn.log_softmax(features, -1)
    picked = jnp.take_along_axis(log_probs, jnp.where(valid, labels, 0)[..., None], axis=-1)
    loss = jnp.where(valid, -picked[..., 0], jnp.nan)
    one_hot = jax.nn.one_hot(labels, num_classes, dtype=features.dtype)
    backprop = jnp.where(valid[..., None], jnp.exp(log_probs) - one_hot, jnp.nan)
    return loss, backprop


def _labels_out_of_range(features, labels):
    """(any label outside [0, num_classes), the first such label)."""
    if labels.size == 0:
        return jnp.asarray(False), jnp.asarray(0, jnp.int64)
    labels = jnp.ravel(jnp.asarray(labels))  # a NumPy array cannot be indexed by a traced index
    bad = (labels < 0) | (labels >= features.shape[-1])
    return jnp.any(bad), labels[jnp.argmax(bad)].astype(jnp.int64)


def _labels_out_of_range_message(op, label: int) -> str:
    classes = op.inputs[0].shape[-1] if op.inputs[0].shape.rank else None
    return (
        f"Received a label value of {label} which is outside the valid range of "
        f"[0, {classes if classes is not None else 'num_classes'})."
    )


register_op(
    "SparseSoftmaxCrossEntropyWithLogits",
    infer=_sparse_xent_infer,
    kernel=_sparse_xent_kernel,
    check=Check(_labels_out_of_range, _labels_out_of_range_message),
)


@register_gradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_grad(op, grad_loss, grad_backprop):
    return [_xent_logits_grad(op, grad_loss, grad_backprop, -1), None]  # integer labels


@export("nn.sparse_softmax_cross_entropy_with_logits")
def sparse_softmax_cross_entropy_with_logits(
    _sentinel: Any = None, labels: Any = None, logits: Any = None, name: str | None = None
) -> Tensor:
    """Cross-entropy between `softmax(logits)` and the classes `labels`, along the last axis.

    Args:
      labels: int32/int64 class indices in `[0, num_classes)`, shaped like `logits` without its
        last dimension.
      logits: `[..., num_classes]` unnormalized log-probabilities.
      name: a name for the operation.

    Returns:
      The loss, shaped like `labels`, of `logits`' dtype.

    Raises:
      InvalidArgumentError: when run with a label outside `[0, num_classes)` ("Received a label
        value of 7 which is outside the valid range of [0, 5)."), as TF's CPU kernel does.
    """
    if _sentinel is not None or labels is None or logits is None:
        raise ValueError(
            "call sparse_softmax_cross_entropy_with_logits with labels=..., logits=..."
        )
    logits = convert_to_tensor(logits, name="logits")
    labels = convert_to_tensor(labels, name="labels")
    op = apply_op("SparseSoftmaxCrossEntropyWithLogits", [logits, labels], name=name)
    return op.outputs[0]


# -- SigmoidCrossEntropyWithLogits --------------------------------------------------------------
def _sigmoid_xent_infer(op) -> list:
    labels, logits = op.inputs
    require_dtype(logits, "floating", dtypes.is_floating)
    require_same_dtype(logits, labels)
    if not logits.shape.is_compatible_with(labels.shape):
        raise ValueError(
            f"logits and labels must have the same shape, got {logits.shape} and {labels.shape}"
        )
    return [(logits.dtype, logits.shape.merge_with(labels.shape))]


def _sigmoid_xent_kernel(labels, logits):
    # max(x, 0) - x * z + log(1 + exp(-|x|)): never overflows (TF1's formula).
    return jnp.maximum(logits, 0) - logits * labels + jnp.log1p(jnp.exp(-jnp.abs(logits)))


register_op("SigmoidCrossEntropyWithLogits", infer=_sigmoid_xent_infer, kernel=_sigmoid_xent_kernel)


@register_gradient("SigmoidCrossEntropyWithLogits")
def _sigmoid_xent_grad(op, grad):
    """d/dx = sigmoid(x) - z and d/dz = -x, for labels z and logits x."""
    labels, logits = op.inputs
    return [-grad * logits, grad * (unary_ops.sigmoid(logits) - labels)]


@export("nn.sigmoid_cross_entropy_with_logits")
def sigmoid_cross_entropy_with_logits(
    _sentinel: Any = None, labels: Any = None, logits: Any = None, name: str | None = None
) -> Tensor:
    """Element-wise logistic loss `-z * log(sigmoid(x)) - (1 - z) * log(1 - sigmoid(x))`.

    Args:
      labels: targets `z` in [0, 1], shaped like `logits`.
      logits: `x`, a floating Tensor.
      name: a name for the operation.

    Returns:
      A Tensor like `logits`.
    """
    if _sentinel is not None or labels is None or logits is None:
        raise ValueError("call sigmoid_cross_entropy_with_logits with labels=..., logits=...")
    logits, labels = convert_n([logits, labels])
    return apply_op("SigmoidCrossEntropyWithLogits", [labels, logits], name=name).outputs[0]


# -- L2Loss -------------------------------------------------------------------------------------
def _l2_loss_infer(op) -> list:
    t = op.inputs[0]
    require_dtype(t, "floating", dtypes.is_floating)
    return [(t.dtype, TensorShape([]))]


register_op("L2Loss", infer=_l2_loss_infer, kernel=lambda t: jnp.sum(t * t) / 2)


@register_gradient("L2Loss")
def _l2_loss_grad(op, grad):
    return [op.inputs[0] * grad]


@export("nn.l2_loss")
def l2_loss(t: Any, name: str | None = None) -> Tensor:
    """`sum(t ** 2) / 2`, a scalar."""
    return apply_op("L2Loss", [convert_to_tensor(t, name="t")], name=name).outputs[0]
