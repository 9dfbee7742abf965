"""`Loss`, the base class of losses, `LossFunctionWrapper`, and how per-sample losses become one
scalar.

    loss = SparseCategoricalCrossentropy(from_logits=True)
    value = loss(y_true, y_pred, sample_weight)     # a scalar Tensor

As Keras 3 (`keras/src/losses/loss.py`): `__call__` converts y_true and y_pred to the loss's
dtype (`sl.config.floatx()` unless given), `call` gives per-sample losses, and the reduction
makes one value of them:

| reduction                         | result                                                  |
| --------------------------------- | ------------------------------------------------------- |
| "sum_over_batch_size" (default)   | sum(losses * weights) / number of losses               |
| "mean"                            | the same                                                |
| "sum"                             | sum(losses * weights)                                   |
| "mean_with_sample_weight"         | sum(losses * weights) / sum(weights) (0 when that is 0) |
| "none" or None                    | losses * weights, unreduced                             |

A Keras mask on `y_pred` (e.g. from Embedding(mask_zero=True) through return_sequences), or on the
losses (sparse categorical cross-entropy's `ignore_class`), weights the masked steps 0 and, for
the two mean reductions, the others total/valid, so the result is the mean over valid steps.

TF1's `sl.losses.Reduction` keys mean the same as Keras's strings where TF1 has the same
reduction (`Reduction.SUM` is "sum", `SUM_OVER_BATCH_SIZE` is "sum_over_batch_size", `MEAN` is
"mean_with_sample_weight", `NONE` is "none"), so `reduction=sl.losses.Reduction.SUM` works as a
tf.keras user expects; TF1's SUM_BY_NONZERO_WEIGHTS has no Keras equivalent and is refused.

Called on JAX tracers (a loss inside `jax.jit` or `jax.value_and_grad`, as Keras's JAX training
loop computes it), a loss builds its ops on placeholders and runs them as JAX operations on the
tracers (`sluice.framework.compiler.on_tracers`), giving a JAX value.

The helpers that match targets to predictions and weights to values serve the metrics too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice._export import export
from sluice._keras import config
from sluice._keras.layers.tracking import get_mask
from sluice._tf1.cells.scopes import snake_case
from sluice.framework.compiler import on_tracers
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import division_ops, math_ops, reduction_ops


def keras_function(fn: Any) -> Any:
    """Keras's function behind a name that Keras and TF1 both spell (`sl.losses.mean_squared_error`:
    sluice/_tf1/metrics/keras_or_tf1.py), else `fn` itself."""
    return getattr(fn, "keras_function", fn)


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


def float_prediction(y_pred: Any) -> Any:
    """`y_pred` as a Tensor, integers and booleans cast to `sl.config.floatx()` (a loss of
    integer predictions is a float, as Keras 3's backends compute it)."""
    y_pred = core_ops.convert_to_tensor(y_pred)
    if dtypes.is_floating(y_pred.dtype):
        return y_pred
    return fill_ops.cast(y_pred, config.floatx())


def prepare_targets(y_true: Any, y_pred: Any) -> tuple:
    """(y_true in y_pred's dtype, y_pred) as Tensors of matching rank (integer predictions
    cast to floatx)."""
    y_pred = float_prediction(y_pred)
    y_true = fill_ops.cast(core_ops.convert_to_tensor(y_true), y_pred.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def apply_mask(sample_weight: Any, mask: Any, dtype: Any, reduction: str | None) -> Any:
    """The sample weights with a Keras mask folded in (rescaled to a mean over valid steps for
    the mean reductions: total / valid on valid steps, 0 when none is valid)."""
    if mask is None:
        return sample_weight
    mask = fill_ops.cast(mask, dtype)
    if reduction in ("mean", "sum_over_batch_size"):
        total = fill_ops.cast(fill_ops.size(mask), dtype)
        mask = mask * division_ops.div_no_nan(total, reduction_ops.reduce_sum(mask))
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
    """The scalar loss: weights (and mask) applied, then reduced as the module's table says."""
    reduction = standardize_reduction(reduction)
    sample_weight = apply_mask(sample_weight, mask, values.dtype, reduction)
    if sample_weight is not None:
        sample_weight = fill_ops.cast(core_ops.convert_to_tensor(sample_weight), values.dtype)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        values = values * broadcast_weight(sample_weight, values)
    if reduction in (None, "none") or values.shape.rank == 0:
        return values
    total = reduction_ops.reduce_sum(values)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        return division_ops.div_no_nan(total, reduction_ops.reduce_sum(sample_weight))
    return division_ops.div_no_nan(total, fill_ops.cast(fill_ops.size(values), values.dtype))


_REDUCTIONS = ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none", None)
# TF1's `sl.losses.Reduction` keys that name one of Keras's reductions
_TF1_REDUCTIONS = {
    "weighted_sum": "sum",
    "weighted_sum_over_batch_size": "sum_over_batch_size",
    "weighted_mean": "mean_with_sample_weight",
}


def standardize_reduction(reduction: Any) -> str | None:
    """Keras's reduction for `reduction` (a Keras string, None, or a TF1 `Reduction` key of the
    same meaning).

    Raises:
      ValueError: any other value, with what is accepted.
    """
    if reduction in _REDUCTIONS:
        return reduction
    if reduction in _TF1_REDUCTIONS:
        return _TF1_REDUCTIONS[reduction]
    hint = {
        "auto": " ('auto' was tf.keras 2's name for 'sum_over_batch_size'.)",
        "weighted_sum_by_nonzero_weights": " (TF1's SUM_BY_NONZERO_WEIGHTS exists only for "
        "sl.losses' TF1 functions: sl.losses.compute_weighted_loss.)",
    }.get(reduction, "")
    raise ValueError(
        f"Invalid reduction {reduction!r}; expected one of 'sum_over_batch_size', 'sum', 'mean', "
        f"'mean_with_sample_weight', 'none' or None.{hint}"
    )


@export("losses.Loss", "Loss")
class Loss:
    """A loss: `call(y_true, y_pred)` gives per-sample losses, `__call__` reduces them.

    Args:
      name: the loss's name (default: the class name in snake case).
      reduction: "sum_over_batch_size" (default), "sum", "mean", "mean_with_sample_weight",
        "none" or None (see the module's table).
      dtype: the dtype y_true, y_pred and the loss are computed in (default:
        `sl.config.floatx()`, "float32").

    >>> class MeanAbsolute(sl.losses.Loss):
    ...     def call(self, y_true, y_pred):
    ...         return sl.reduce_mean(sl.abs(y_true - y_pred), axis=-1)
    >>> loss = MeanAbsolute(reduction="sum")([[1.0, 2.0]], [[2.0, 4.0]])
    >>> float(sl.Session().run(loss))
    1.5
    """

    def __init__(
        self, name: str | None = None, reduction: str = "sum_over_batch_size", dtype: Any = None
    ):
        self.name = name or snake_case(type(self).__name__)
        self.reduction = standardize_reduction(reduction)
        self._dtype = dtypes.as_dtype(dtype or config.floatx())

    @property
    def dtype(self) -> str:
        return self._dtype.name

    def call(self, y_true: Any, y_pred: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define call(y_true, y_pred).")

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        if on_tracers.has_tracers((y_true, y_pred, sample_weight)):  # in jax.jit, jax.grad, ...
            return on_tracers.call_on_tracers(self.__call__, (y_true, y_pred, sample_weight), {})
        in_mask = get_mask(y_pred)
        y_pred = _as(y_pred, self._dtype)
        y_true = _as(y_true, self._dtype)
        values = self.call(y_true, y_pred)
        mask = merge_masks(in_mask, get_mask(values))
        values = fill_ops.cast(core_ops.convert_to_tensor(values), self._dtype)
        return reduce_weighted_values(values, sample_weight, mask, self.reduction)

    def get_config(self) -> dict:
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config: dict) -> Loss:
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name}>"


def _as(x: Any, dtype: Any) -> Any:
    """`x` as a Tensor of `dtype` (booleans and integers cast, as Keras's convert_to_tensor)."""
    x = core_ops.convert_to_tensor(x)
    return x if x.dtype == dtype else fill_ops.cast(x, dtype)


class LossFunctionWrapper(Loss):
    """A `Loss` calling `fn(y_true, y_pred, **kwargs)` (y_true and y_pred first brought to the same
    rank when they differ by a last axis of 1, as Keras 3). A subclass (`BinaryCrossentropy`,
    ...) keeps each of those keyword arguments as an attribute too (`loss.from_logits`), as
    Keras 3's loss classes do."""

    def __init__(
        self,
        fn: Callable,
        reduction: str = "sum_over_batch_size",
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ):
        fn = keras_function(fn)
        super().__init__(name=name or fn.__name__, reduction=reduction, dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs
        if type(self) is not LossFunctionWrapper:
            for key, value in kwargs.items():
                setattr(self, key, value)

    def call(self, y_true: Any, y_pred: Any) -> Any:
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict:
        """The name, the reduction and the function's keyword arguments (a subclass's own
        arguments, as Keras 3's classes return them)."""
        return {**super().get_config(), **self._fn_kwargs}

    def __repr__(self) -> str:
        return f"<{type(self).__name__}({self.fn.__name__}, kwargs={self._fn_kwargs})>"
