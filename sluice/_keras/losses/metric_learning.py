"""Keras 3's metric-learning loss: Circle loss (Sun et al., 2020), for integer labels and
L2-normalized embeddings (a `UnitNormalization` after the last `Dense`).

For each query i and reference j, with d_ij = max(1 - <e_i, r_j>, 0) the cosine distance, P the
pairs of equal labels (the pair i == j left out when `remove_diagonal`) and N the others:

    positive logit  -gamma * max(margin + d, 0) * (margin - d)          on P
    negative logit   gamma * max(1 + margin - d, 0) * (1 - margin - d)  on N
    loss_i = softplus(logsumexp_j positive logits + logsumexp_j negative logits)

A query with no positive or no negative pair has loss 0 and is masked out of the mean
reductions (Keras sets a mask loss > 0), so "sum_over_batch_size" averages over the others.

>>> labels = np.array([0, 0, 1])
>>> embeddings = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]], np.float32)
>>> loss = sl.losses.Circle(gamma=2.0)(labels, embeddings)  # 0.4518, 0.7763 and 0 (masked)
>>> print(np.round(float(loss), 4))
0.6141
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers.tracking import set_mask
from sluice._keras.losses.loss import LossFunctionWrapper
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import composite_reductions, math_ops, matmul_ops
from sluice.framework.ops.nn import nn_ops


def _pair_masks(labels: Any, ref_labels: Any, remove_diagonal: bool) -> tuple[Any, Any]:
    """(positive, negative): the (queries, references) pairs of equal and of different labels;
    the positive pair of a query with itself (same index) left out when `remove_diagonal`."""
    rows = array_ops.reshape(labels, [-1, 1])
    columns = array_ops.reshape(ref_labels, [1, -1])
    positive = math_ops.equal(rows, columns)
    negative = math_ops.logical_not(positive)
    if remove_diagonal:
        i = array_ops.reshape(fill_ops.range(fill_ops.size(labels)), [-1, 1])
        j = array_ops.reshape(fill_ops.range(fill_ops.size(ref_labels)), [1, -1])
        positive = math_ops.logical_and(positive, math_ops.not_equal(i, j))
    return positive, negative


@export("losses.circle")
def circle(
    y_true: Any,
    y_pred: Any,
    ref_labels: Any = None,
    ref_embeddings: Any = None,
    remove_diagonal: bool = True,
    gamma: float = 80.0,
    margin: float = 0.4,
) -> Any:
    """The Circle loss of each embedding in `y_pred` (integer labels `y_true`) against the
    reference embeddings (default: the batch itself); see the module docstring.

    Args:
      y_true: integer labels, one per embedding.
      y_pred: L2-normalized embeddings, (batch, dim).
      ref_labels, ref_embeddings: the references (default y_true and y_pred).
      remove_diagonal: leave the pair of an embedding with itself out of the positives.
      gamma: the scale of the similarities.
      margin: the relaxation: below it negatives weigh more and positives less.

    Returns:
      The loss per embedding, (batch,), masked where it is 0.
    """
    y_pred = core_ops.convert_to_tensor(y_pred)
    labels = fill_ops.cast(core_ops.convert_to_tensor(y_true), dtypes.int32)
    refs = y_pred if ref_embeddings is None else core_ops.convert_to_tensor(ref_embeddings)
    refs = fill_ops.cast(refs, y_pred.dtype)
    ref_labels = (
        labels
        if ref_labels is None
        else fill_ops.cast(core_ops.convert_to_tensor(ref_labels), dtypes.int32)
    )
    zero = fill_ops.zeros([], y_pred.dtype)
    distance = math_ops.maximum(1.0 - matmul_ops.matmul(y_pred, refs, transpose_b=True), zero)
    positive, negative = _pair_masks(labels, ref_labels, remove_diagonal)
    pos_weight = math_ops.maximum((margin + distance) * fill_ops.cast(positive, y_pred.dtype), zero)
    neg_weight = math_ops.maximum(
        (1.0 + margin - distance) * fill_ops.cast(negative, y_pred.dtype), zero
    )
    pos_logits = -gamma * pos_weight * (margin - distance)
    neg_logits = gamma * neg_weight * (1.0 - margin - distance)
    none = fill_ops.fill(fill_ops.shape(distance), np.array(-np.inf, y_pred.dtype))

    def logsumexp(mask: Any, logits: Any) -> Any:
        return composite_reductions.reduce_logsumexp(gather_ops.where_v2(mask, logits, none), 1)

    loss = nn_ops.softplus(logsumexp(positive, pos_logits) + logsumexp(negative, neg_logits))
    set_mask(loss, math_ops.greater(loss, zero))
    return loss


@export("losses.Circle")
class Circle(LossFunctionWrapper):
    """Circle loss between integer labels and L2-normalized embeddings (see `circle`).

    Args:
      gamma: the scale of the similarities (80 by default).
      margin: the relaxation factor (0.4 by default).
      remove_diagonal: leave each embedding's pair with itself out of the positives.
      reduction, name, dtype: as every loss.
    """

    def __init__(
        self,
        gamma: float = 80.0,
        margin: float = 0.4,
        remove_diagonal: bool = True,
        reduction: str = "sum_over_batch_size",
        name: str = "circle",
        dtype: Any = None,
    ):
        super().__init__(
            circle, reduction=reduction, name=name, dtype=dtype, gamma=gamma, margin=margin,
            remove_diagonal=remove_diagonal,
        )  # fmt: skip
