"""`Metric`, the base of Keras 3 metrics kept in graph Variables, and the reducing metrics
(`Mean`, `Sum`, `MeanMetricWrapper`): `update_state` builds an op adding a batch to the
running state, `result()` a Tensor reading it, `reset_state()` zeroes it (host-side).
Given values (NumPy arrays, lists, numbers) instead of tensors, `update_state` runs at once and
`result()` gives the value, as Keras 3 (sluice/_keras/metrics/value_calls.py).

Mean-type metrics keep `total` and `count`: each update adds sum(values * weights) and
sum(weights), where the weights are the sample weights broadcast over the values and a Keras
mask on y_pred (so a masked sequence counts only its valid steps). The state lives in
`metrics/<name>/total` and `metrics/<name>/count` of the model's graph, so a BackupAndRestore
checkpoint taken mid-epoch carries the running averages too.

>>> mean = sl.metrics.Mean()
>>> update, result = mean.update_state(sl.constant([1.0, 2.0, 3.0])), mean.result()
>>> with sl.Session() as sess:
...     sess.run(sl.global_variables_initializer())
...     sess.run(update)
...     sess.run(mean.update_state(sl.constant([6.0])))
...     print(sess.run(result))   # (1 + 2 + 3 + 6) / 4
3.0
>>> on_values = sl.metrics.Mean()
>>> on_values.update_state([1.0, 2.0, 3.0])
>>> on_values.update_state([6.0])
>>> print(on_values.result())
3.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers import runtime
from sluice._keras.layers.tracking import get_mask, graph_of
from sluice._keras.losses.loss import (
    broadcast_weight,
    keras_function,
    merge_masks,
    squeeze_or_expand_to_same_rank,
)
from sluice._keras.metrics import value_calls
from sluice._tf1.cells.scopes import snake_case
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops
from sluice.framework.variables import Variable


@export("metrics.Metric")
class Metric:
    """Base class: subclasses create state with `add_variable` (from `build_state`) and define
    `update_state(...) -> Operation` and `result() -> Tensor`."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Metric:
        metric = super().__new__(cls)
        value_calls.run_on_values(metric)  # update_state and result on values, at once
        return metric

    def __init__(self, name: str | None = None, dtype: Any = None):
        self.name = name or snake_case(type(self).__name__)
        self.dtype = dtypes.as_dtype(dtype or "float32")
        self._variables: list[Variable] = []
        self._graph = None

    @property
    def variables(self) -> list[Variable]:
        return list(self._variables)

    def add_variable(self, name: str, shape: tuple = ()) -> Variable:
        """A zero state Variable `metrics/<metric name>/<name>` of `shape` (a scalar by default)
        in the metric's graph."""
        g = self._graph
        with g.as_default(), g.name_scope(None):
            var = Variable(
                np.zeros(shape, self.dtype), trainable=False, name=f"metrics/{self.name}/{name}"
            )
        self._variables.append(var)
        return var

    def _ensure_state(self, tensors: list) -> None:
        g = graph_of(tensors)
        if self._graph is None:
            self._graph = g
            self.build_state()
        elif self._graph is not g:
            raise ValueError(f"Metric {self.name!r} already keeps its state in another graph.")

    def build_state(self) -> None:
        pass

    def update_state(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def result(self) -> Any:
        raise NotImplementedError

    def reset_state(self) -> None:
        """Zeroes the state in the session of the metric's graph (no op is added)."""
        if self._graph is not None:
            runtime.runtime_for(self._graph).write(
                self._variables, [np.zeros(v.shape.as_list(), v.dtype) for v in self._variables]
            )

    def value(self) -> float:
        """The current result, computed host-side from the state in the session."""
        raise NotImplementedError

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}

    @classmethod
    def from_config(cls, config: dict) -> Metric:
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name}>"


class _Reduce(Metric):
    """total (+ count): the weighted sum (or mean) of every value seen."""

    _mean = True

    def build_state(self) -> None:
        self.total = self.add_variable("total")
        self.count = self.add_variable("count")

    def update_state(self, values: Any, sample_weight: Any = None) -> Any:
        values = core_ops.convert_to_tensor(values)
        self._ensure_state([values])
        values = fill_ops.cast(values, self.dtype)
        if sample_weight is None:
            weight = fill_ops.ones_like(values)
        else:
            weight = fill_ops.cast(core_ops.convert_to_tensor(sample_weight), self.dtype)
            values, weight = squeeze_or_expand_to_same_rank(values, weight)
            weight = broadcast_weight(weight, values) * fill_ops.ones_like(values)
            values = values * fill_ops.ones_like(weight)
        add_total = self.total.assign_add(
            reduction_ops.reduce_sum(values * weight), read_value=False
        )
        add_count = self.count.assign_add(reduction_ops.reduce_sum(weight), read_value=False)
        return core_ops.group(add_total, add_count, name=f"update_{self.name}")

    def value(self) -> float:
        if self._graph is None:
            return 0.0
        total, count = runtime.runtime_for(self._graph).read([self.total, self.count])
        return float(total) / max(float(count), 1e-12) if self._mean else float(total)

    def result(self) -> Any:
        if self._graph is None:  # never updated: its state, at zero, in the graph being built
            self._ensure_state([])
        if not self._mean:
            return self.total.value()
        count = self.count.value()
        return self.total.value() / math_ops.maximum(
            count, core_ops.convert_to_tensor(1e-12, dtype=count.dtype)
        )


@export("metrics.Mean")
class Mean(_Reduce):
    """The (weighted) mean of the values seen."""


@export("metrics.Sum")
class Sum(_Reduce):
    """The (weighted) sum of the values seen."""

    _mean = False


@export("metrics.MeanMetricWrapper")
class MeanMetricWrapper(Mean):
    """The mean of `fn(y_true, y_pred, **kwargs)` over every sample (and valid step) seen."""

    def __init__(self, fn: Callable, name: str | None = None, dtype: Any = None, **kwargs: Any):
        fn = keras_function(fn)  # Keras's of a name TF1 shares (sl.metrics.mean_squared_error)
        super().__init__(name=name or fn.__name__, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_pred = core_ops.convert_to_tensor(y_pred)
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        mask = merge_masks(get_mask(y_pred), get_mask(values))
        if mask is not None:
            mask = fill_ops.cast(mask, self.dtype)
            if sample_weight is not None:
                sw = fill_ops.cast(core_ops.convert_to_tensor(sample_weight), self.dtype)
                mask = mask * broadcast_weight(sw, mask)
            sample_weight = mask
        return super().update_state(values, sample_weight)

    def get_config(self) -> dict:
        # the function only for a plain wrapper: a subclass (Accuracy, ...) fixes its own
        fn = {"fn": self._fn} if type(self) is MeanMetricWrapper else {}
        return {**super().get_config(), **fn, **self._fn_kwargs}
