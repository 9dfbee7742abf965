"""`sl.contrib.seq2seq`: TF1's `tf.contrib.seq2seq.sequence_loss` over [batch, time] Tensors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice._export import export
from sluice.framework.ir.graph import Tensor, name_scope
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops
from sluice.framework.ops.nn import loss_ops

# Added to the summed weights before dividing, so all-zero weights give 0, not NaN (as TF1).
_EPSILON = 1e-12


@export("contrib.seq2seq.sequence_loss")
def sequence_loss(
    logits: Any,
    targets: Any,
    weights: Any,
    average_across_timesteps: bool = True,
    average_across_batch: bool = True,
    sum_over_timesteps: bool = False,
    sum_over_batch: bool = False,
    softmax_loss_function: Callable[..., Tensor] | None = None,
    name: str | None = None,
) -> Tensor:
    """Weighted cross-entropy of [batch, time] sequences (TF1 `tf.contrib.seq2seq.sequence_loss`).

    Semantics, with `xent[b, t]` the cross-entropy of `logits[b, t]` against `targets[b, t]`
    and `w = weights`::

        loss = xent * w                                               # [batch, time]
        both averages:  sum(loss) / (sum(w) + 1e-12)                  # scalar
        both sums:      sum(loss) / count_nonzero(w)  (0 when no w)   # scalar
        one average:    sum(loss, axis) / (sum(w, axis) + 1e-12)      # the other axis kept
        one sum:        sum(loss, axis) / count_nonzero(w, axis)      # (0 where no w)
        neither:        loss                                          # [batch, time]

    where `axis` is 0 (batch) for `average_across_batch`/`sum_over_batch`, else 1 (time). As
    in TF1, the "sum" modes divide by the number of non-zero weights.

    Args:
      logits: a [batch, time, num_classes] float Tensor.
      targets: a [batch, time] int Tensor.
      weights: a [batch, time] float Tensor (e.g. a padding mask).
      average_across_timesteps, average_across_batch, sum_over_timesteps, sum_over_batch:
        the reduction, as above; an average and a sum over the same axis cannot both be set.
      softmax_loss_function: `f(labels=[n], logits=[n, classes]) -> [n]`, used in place of
        sparse softmax cross-entropy.
      name: the name scope (default "sequence_loss").

    Returns:
      A scalar, a [batch] or [time] vector, or a [batch, time] Tensor, as above.

    Raises:
      ValueError: a Tensor of the wrong rank, or an average and a sum over the same axis.

    >>> logits = sl.zeros([2, 3, 4])
    >>> targets = sl.zeros([2, 3], dtype=sl.int32)
    >>> round(float(sl.Session().run(sequence_loss(logits, targets, sl.ones([2, 3])))), 4)
    1.3863
    """
    logits, targets, weights = (core_ops.convert_to_tensor(t) for t in (logits, targets, weights))
    for what, t, rank, layout in (
        ("Logits", logits, 3, "[batch_size x sequence_length x logits]"),
        ("Targets", targets, 2, "[batch_size x sequence_length]"),
        ("Weights", weights, 2, "[batch_size x sequence_length]"),
    ):
        if t.shape.rank != rank:
            raise ValueError(f"sequence_loss: {what} must be a {layout} tensor, got {t.shape}.")
    for axis, average, total in (
        ("timesteps", average_across_timesteps, sum_over_timesteps),
        ("batch", average_across_batch, sum_over_batch),
    ):
        if average and total:
            raise ValueError(
                f"sequence_loss: average_across_{axis} and sum_over_{axis} cannot be set to "
                "True at the same time."
            )
    with name_scope(name, "sequence_loss"):
        num_classes = fill_ops.shape(logits)[2]
        logits_flat = array_ops.reshape(logits, join_ops.stack([-1, num_classes]))
        targets_flat = array_ops.reshape(targets, [-1])
        if softmax_loss_function is None:
            crossent = loss_ops.sparse_softmax_cross_entropy_with_logits(
                labels=targets_flat, logits=logits_flat
            )
        else:
            crossent = softmax_loss_function(labels=targets_flat, logits=logits_flat)
        weights = fill_ops.cast(weights, crossent.dtype)
        crossent = math_ops.multiply(crossent, array_ops.reshape(weights, [-1]))
        if average_across_timesteps and average_across_batch:
            return _average(crossent, weights, None)
        if sum_over_timesteps and sum_over_batch:
            return _sum_over_nonzero(crossent, weights, None)
        logits_shape = fill_ops.shape(logits)
        batch_time = join_ops.stack([logits_shape[0], logits_shape[1]])
        crossent = array_ops.reshape(crossent, batch_time)
        crossent.set_shape(logits.shape[0:2])
        if average_across_timesteps or average_across_batch:
            return _average(crossent, weights, 0 if average_across_batch else 1)
        if sum_over_timesteps or sum_over_batch:
            return _sum_over_nonzero(crossent, weights, 0 if sum_over_batch else 1)
        return crossent


def _average(crossent: Tensor, weights: Tensor, axis: int | None) -> Tensor:
    total = reduction_ops.reduce_sum(weights, axis=axis)
    return math_ops.truediv(
        reduction_ops.reduce_sum(crossent, axis=axis), math_ops.add(total, _EPSILON)
    )


def _sum_over_nonzero(crossent: Tensor, weights: Tensor, axis: int | None) -> Tensor:
    """sum(crossent, axis) / count_nonzero(weights, axis), 0 where the count is 0."""
    nonzero = fill_ops.cast(math_ops.not_equal(weights, 0), crossent.dtype)
    count = reduction_ops.reduce_sum(nonzero, axis=axis)
    summed = reduction_ops.reduce_sum(crossent, axis=axis)
    safe = math_ops.truediv(summed, math_ops.maximum(count, 1))
    return gather_ops.where_v2(math_ops.greater(count, 0), safe, fill_ops.zeros_like(safe))
