"""Keras 3's correlation metrics: the Pearson and the concordance correlation coefficients of
y_true and y_pred along `axis` (per sample by default), and the classes averaging them over
every sample seen.

    pearson_correlation(t, p)      mean(z(t) * z(p)),  z(x) = (x - mean(x)) / std(x)
    concordance_correlation(t, p)  mean(2 (t - mean t)(p - mean p)) / (var t + var p +
                                   (mean t - mean p) ** 2 + epsilon)

A constant y_true or y_pred row has no Pearson coefficient (0 / 0), as in Keras.

>>> m = sl.metrics.PearsonCorrelation()
>>> m.update_state([[0, 1, 0.5], [1, 1, 0.2]], [[0.1, 0.9, 0.5], [1, 0.9, 0.2]])
>>> print(np.round(m.result(), 6))   # Keras 3's example: 0.9966996338993913
0.9967
>>> m = sl.metrics.ConcordanceCorrelation()
>>> m.update_state([[0, 1, 0.5], [1, 1, 0.2]], [[0.1, 0.9, 0.5], [1, 0.9, 0.2]])
>>> print(np.round(m.result(), 6))   # Keras 3's example: 0.9816320385426076
0.981632
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import config
from sluice._keras.losses.loss import squeeze_or_expand_to_same_rank
from sluice._keras.metrics.metric import MeanMetricWrapper
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import reduction_ops, unary_ops


def _pair(y_true: Any, y_pred: Any) -> tuple[Any, Any]:
    y_pred = core_ops.convert_to_tensor(y_pred)
    if not dtypes.is_floating(y_pred.dtype):
        y_pred = fill_ops.cast(y_pred, config.floatx())
    y_true = fill_ops.cast(core_ops.convert_to_tensor(y_true), y_pred.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def _centered(x: Any, axis: Any) -> tuple[Any, Any]:
    """(x - mean(x), mean(x)) along `axis`."""
    mean = reduction_ops.reduce_mean(x, axis=axis, keepdims=True)
    return x - mean, mean


@export("metrics.pearson_correlation")
def pearson_correlation(y_true: Any, y_pred: Any, axis: Any = -1) -> Any:
    """The Pearson correlation coefficient of y_true and y_pred along `axis`.

    >>> sl.metrics.pearson_correlation([[0, 1, 0.5], [1, 1, 0.2]],
    ...                                [[0.1, 0.9, 0.5], [1, 0.9, 0.2]]).numpy().round(6)
    array([1.      , 0.993399], dtype=float32)
    """
    y_true, y_pred = _pair(y_true, y_pred)
    t, _ = _centered(y_true, axis)
    p, _ = _centered(y_pred, axis)

    def std(x: Any) -> Any:
        return unary_ops.sqrt(reduction_ops.reduce_mean(x * x, axis=axis, keepdims=True))

    return reduction_ops.reduce_mean((t / std(t)) * (p / std(p)), axis=axis)


@export("metrics.concordance_correlation")
def concordance_correlation(y_true: Any, y_pred: Any, axis: Any = -1) -> Any:
    """The concordance correlation coefficient of y_true and y_pred along `axis`: how close
    they are to the line y_pred = y_true, 1 on it.

    >>> sl.metrics.concordance_correlation([[0, 1, 0.5], [1, 1, 0.2]],
    ...                                    [[0.1, 0.9, 0.5], [1, 0.9, 0.2]]).numpy().round(6)
    array([0.975609, 0.987654], dtype=float32)
    """
    y_true, y_pred = _pair(y_true, y_pred)
    t, t_mean = _centered(y_true, axis)
    p, p_mean = _centered(y_pred, axis)
    t_var = reduction_ops.reduce_mean(t * t, axis=axis, keepdims=True)
    p_var = reduction_ops.reduce_mean(p * p, axis=axis, keepdims=True)
    norm = t_var + p_var + (t_mean - p_mean) * (t_mean - p_mean) + config.epsilon()
    return reduction_ops.reduce_mean(2.0 * t * p / norm, axis=axis)


@export("metrics.PearsonCorrelation")
class PearsonCorrelation(MeanMetricWrapper):
    """The mean Pearson correlation coefficient (`pearson_correlation` along `axis`) over every
    sample seen: 1 for a perfect positive linear relation, 0 for none, -1 for a negative one."""

    def __init__(self, name: str = "pearson_correlation", dtype: Any = None, axis: Any = -1):
        super().__init__(pearson_correlation, name=name, dtype=dtype, axis=axis)
        self.axis = axis


@export("metrics.ConcordanceCorrelation")
class ConcordanceCorrelation(MeanMetricWrapper):
    """The mean concordance correlation coefficient (`concordance_correlation` along `axis`)
    over every sample seen: agreement of y_pred with y_true, 1 when equal."""

    def __init__(self, name: str = "concordance_correlation", dtype: Any = None, axis: Any = -1):
        super().__init__(concordance_correlation, name=name, dtype=dtype, axis=axis)
        self.axis = axis
