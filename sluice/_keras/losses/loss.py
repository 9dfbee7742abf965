"""`Loss`, the base class of losses, and how per-sample losses become one scalar.

    loss = SparseCategoricalCrossentropy(from_logits=True)
    value = loss(y_true, y_pred, sample_weight)     # a scalar Tensor

Reduction "sum_over_batch_size" (the default) is sum(losses * weights) / number of losses; a
Keras mask on `y_pred` (e.g. from Embedding(mask_zero=True) through return_sequences), or on the
losses (sparse categorical cross-entropy's `ignore_class`), weights the masked steps 0 and the
others total/valid, so the result is the mean over valid steps.
The helpers that match targets to predictions and weights to values serve the metrics too.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import config
from sluice._keras.layers.tracking import get_mask
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import division_ops, math_ops, reduction_ops


def constant_like(like: Any, value: float) -> Any:
    """`value` as a Tensor of `like`'s dtype."""
    return core_ops.convert_to_tensor(value, dtype=like.dtype)


def squeeze_or_expand_to_same_rank(x1: Any, x2: Any, expand_rank_1: bool = True) -> tuple:
    """Keras's rule: when the ranks differ by one and the longer one ends in 1, squeeze it (or
    expand a rank-1 partner)."""
    r1, r2 = x1.shape.rank, x2.shape.rank
    if r1 is None or r2 is None or r1 == r2:
        return x1, x2
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = array_ops.expand_dims(x2, -1)
        else:
            x1 = array_ops.squeeze(x1, [-1])
    if r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = array_ops.expand_dims(x1, -1)
        else:
            x2 = array_ops.squeeze(x2, [-1])
    return x1, x2


def prepare_targets(y_true: Any, y_pred: Any) -> tuple:
    """(y_true in y_pred's dtype, y_pred) as Tensors of matching rank."""
    y_pred = core_ops.convert_to_tensor(y_pred)
    y_true = fill_ops.cast(core_ops.convert_to_tensor(y_true), y_pred.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def apply_mask(sample_weight: Any, mask: Any, dtype: Any, reduction: str) -> Any:
    """The sample weights with a Keras mask folded in (rescaled to a mean over valid steps for
    the mean reductions)."""
    if mask is None:
        return sample_weight
    mask = fill_ops.cast(mask, dtype)
    if reduction in ("mean", "sum_over_batch_size"):
        total = fill_ops.cast(fill_ops.size(mask), dtype)
        valid = reduction_ops.reduce_sum(mask)
        mask = mask * (total / (valid + constant_like(valid, config.epsilon())))
    if sample_weight is None:
        return mask
    sample_weight = fill_ops.cast(sample_weight, dtype)
    mask, sample_weight = squeeze_or_expand_to_same_rank(mask, sample_weight)
    return broadcast_weight(sample_weight, mask) * mask


def merge_masks(a: Any, b: Any) -> Any:
    """The Keras mask of both `a` and `b` (either may be None): the input's mask and the one a
    loss function sets on its values (sparse categorical cross-entropy's `ignore_class`)."""
    if a is None or b is None:
        return b if a is None else a
    return math_ops.logical_and(fill_ops.cast(a, dtypes.bool_), fill_ops.cast(b, dtypes.bool_))


def broadcast_weight(weight: Any, values: Any) -> Any:
    """`weight` with trailing axes of size 1 added until it has the rank of `values`."""
    while (
        weight.shape.rank is not None
        and values.shape.rank is not None
        and weight.shape.rank < values.shape.rank
    ):
        weight = array_ops.expand_dims(weight, -1)
    return weight


def reduce_weighted_values(
    values: Any, sample_weight: Any = None, mask: Any = None, reduction: str = "sum_over_batch_size"
) -> Any:
    """The scalar loss: weights (and mask) applied, then "sum", "sum_over_batch_size" ("mean")
    or "mean_with_sample_weight" (the sum divided by the sum of the weights as given, 0 when
    they sum to 0; by the number of values when there are none, as Keras 3)."""
    sample_weight = apply_mask(sample_weight, mask, values.dtype, reduction)
    if sample_weight is not None:
        sample_weight = fill_ops.cast(sample_weight, values.dtype)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        values = values * broadcast_weight(sample_weight, values)
    if reduction in (None, "none"):
        return values
    total = reduction_ops.reduce_sum(values)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        return division_ops.div_no_nan(total, reduction_ops.reduce_sum(sample_weight))
    size = fill_ops.cast(fill_ops.size(values), values.dtype)
    return total / math_ops.maximum(size, constant_like(size, 1.0))


_REDUCTIONS = ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none", None)


@export("losses.Loss")
class Loss:
    """A loss: `call(y_true, y_pred)` gives per-sample losses, `__call__` reduces them.

    Args:
      name: the loss's name.
      reduction: "sum_over_batch_size" (default; "mean" is the same), "sum",
        "mean_with_sample_weight" (the weighted sum over the sum of the weights) or "none".
      dtype: the dtype of the loss (default: that of y_pred).
    """

    def __init__(
        self, name: str | None = None, reduction: str = "sum_over_batch_size", dtype: Any = None
    ):
        if reduction not in _REDUCTIONS:
            raise ValueError(
                f"Invalid reduction {reduction!r}; expected one of 'sum_over_batch_size', "
                "'sum', 'mean', 'mean_with_sample_weight', 'none' or None."
            )
        self.name = name
        self.reduction = reduction
        self.dtype = dtype

    def call(self, y_true: Any, y_pred: Any) -> Any:
        raise NotImplementedError

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_pred = core_ops.convert_to_tensor(y_pred)
        values = self.call(y_true, y_pred)
        mask = merge_masks(get_mask(y_pred), get_mask(values))
        if self.dtype is not None:
            values = fill_ops.cast(values, self.dtype)
        return reduce_weighted_values(values, sample_weight, mask, self.reduction)

    def get_config(self) -> dict:
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config: dict) -> Loss:
        return cls(**config)
