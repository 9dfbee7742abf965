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
from sluice._keras import initializers as initializers_lib
from sluice._keras.layers import runtime
from sluice._keras.layers.tracking import get_mask, graph_of
from sluice._keras.losses.loss import (
    broadcast_weight,
    keras_function,
    merge_masks,
    squeeze_or_expand_to_same_rank,
)
from sluice._keras.metrics import value_calls
from sluice._keras.utils.naming import auto_name
from sluice.framework import state_cells
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir import tracing as trace_scope
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops
from sluice.framework.variables import Variable


@export("metrics.Metric")
class Metric:
    """Base class of Keras 3's metrics: state made by `add_variable`, `update_state(...)` adding
    a batch to it, `result()` reading it, `reset_state()` zeroing it; `metric(...)` updates and
    gives the result.

    A metric's variables belong to the metric, as a layer's weights belong to the layer: each is
    a state cell (`sluice.framework.state_cells`) whose first mirror lives in the metric's own
    graph, and whose mirror in any other graph is made when the metric is used there. So one
    metric may be updated by the steps of several models (a GAN's two steps sharing one `Mean`
    tracker) and on arrays, and `result()` and `reset_state()` see one state wherever it was
    last updated.

    Subclasses create their state in `__init__` (Keras 3's way: `self.total =
    self.add_variable(shape=(), initializer="zeros", name="total")`) or, when its shape comes
    from the first batch, in `build_state`, which `self._ensure_state([y_pred])` calls once at
    the start of `update_state`. `update_state` returns the update op given tensors (sluice
    metrics are graph code), and `result()` a Tensor; on values both run at once
    (`sluice/_keras/metrics/value_calls.py`).
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Metric:
        metric = super().__new__(cls)
        value_calls.run_on_values(metric)  # update_state and result on values, at once
        return metric

    def __init__(self, name: str | None = None, dtype: Any = None):
        self.name = name or auto_name(type(self).__name__)
        self.dtype = dtypes.as_dtype(dtype or "float32")
        self._variables: list[Variable] = []
        self._state_graph: graph_lib.Graph | None = None
        self._state_built = False

    @property
    def variables(self) -> list[Variable]:
        return list(self._variables)

    def state_graph(self) -> graph_lib.Graph:
        """The metric's own graph: where its variables are first made, and where its updates
        and results on values run (Keras runtime-managed, see `runtime.manage`)."""
        if self._state_graph is None:
            self._state_graph = graph_lib.Graph()
            runtime.manage(self._state_graph)
        return self._state_graph

    def add_variable(
        self,
        shape: Any = (),
        initializer: Any = "zeros",
        dtype: Any = None,
        aggregation: str = "sum",
        name: str | None = None,
    ) -> Variable:
        """A state variable `metrics/<metric name>/<name>` of `shape` (a scalar by default),
        starting at `initializer` (Keras 3's `Metric.add_variable`); usable in any graph.

        Args:
          shape: its fully known shape.
          initializer: a name ("zeros", ...), an Initializer or a callable `(shape, dtype)`.
          dtype: default the metric's dtype.
          aggregation: Keras's across-replica aggregation (sluice sums per step's data).
          name: its name inside the metric.
        """
        del aggregation
        dtype = dtypes.as_dtype(dtype or self.dtype)
        shape = [int(d) for d in (shape or ())]
        init = initializers_lib.get(initializer or "zeros")
        name = name or f"variable_{len(self._variables)}"

        def initial_value() -> Any:
            with trace_scope.outside_trace():
                return init(shape, dtype=dtype)

        g = self.state_graph()
        with g.as_default(), g.name_scope(None):
            variable = Variable(
                initial_value, trainable=False, name=f"metrics/{self.name}/{name}", dtype=dtype
            )
        path = variable.op.get_attr("shared_name")
        state_cells.attach(
            variable,
            state_cells.StateCell(path, dtype, variable.shape, initial_value, trainable=False),
        )
        self._variables.append(variable)
        return variable

    def add_weight(
        self, shape: Any = (), initializer: Any = None, dtype: Any = None, name: str | None = None
    ) -> Variable:
        """`add_variable` (Keras 3 keeps this name for older code)."""
        return self.add_variable(shape=shape, initializer=initializer, dtype=dtype, name=name)

    def _ensure_state(self, tensors: list = ()) -> graph_lib.Graph:
        """Builds the state on first use (`build_state`) and makes its mirrors in the graph of
        `tensors` (the default graph when there are none), which it returns."""
        g = graph_of(list(tensors))
        if not self._state_built:
            self.build_state()
            self._state_built = True
        self.mirror_state(g)
        return g

    def mirror_state(self, g: graph_lib.Graph) -> None:
        """Makes the mirrors of the state in `g` (at its root), so that reads and updates built
        there use them."""
        for variable in self._variables:
            variable.graph_variable(g)

    def build_state(self) -> None:
        pass

    def update_state(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def result(self) -> Any:
        raise NotImplementedError

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """`update_state(*args, **kwargs)`, then `result()` (Keras 3). Given tensors, the result
        Tensor runs the update first."""
        update = self.update_state(*args, **kwargs)
        if update is None:
            return self.result()
        with update.graph.as_default(), update.graph.control_dependencies([update]):
            return self.result()

    def reset_state(self) -> None:
        """Writes each variable's zeros into its state (host-side, no op is added)."""
        if self._variables:
            runtime.runtime_for(self.state_graph()).write(
                self._variables, [np.zeros(v.shape.as_list(), v.dtype) for v in self._variables]
            )

    def value(self) -> float:
        """The current result, computed host-side from the state."""
        raise NotImplementedError

    def read_state(self) -> list[np.ndarray]:
        """The current values of the variables (wherever they were last updated)."""
        return runtime.runtime_for(self.state_graph()).read(self._variables)

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
        self.total = self.add_variable(name="total")
        self.count = self.add_variable(name="count")

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
        if not self._variables:
            return 0.0
        total, count = self.read_state()
        return float(total) / max(float(count), 1e-12) if self._mean else float(total)

    def result(self) -> Any:
        self._ensure_state([])  # never updated: its state, at zero, in the graph being built
        if not self._mean:
            return self.total.value()
        count = self.count.value()
        return self.total.value() / math_ops.maximum(
            count, core_ops.convert_to_tensor(1e-12, dtype=count.dtype)
        )


@export("metrics.Mean")
class Mean(_Reduce):
    """The (weighted) mean of the values seen."""

    def __init__(self, name: str = "mean", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)


@export("metrics.Sum")
class Sum(_Reduce):
    """The (weighted) sum of the values seen."""

    _mean = False

    def __init__(self, name: str = "sum", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)


@export("metrics.MeanMetricWrapper")
class MeanMetricWrapper(Mean):
    """The mean of `fn(y_true, y_pred, **kwargs)` over every sample (and valid step) seen."""

    def __init__(self, fn: Callable, name: str | None = None, dtype: Any = None, **kwargs: Any):
        fn = keras_function(fn)  # Keras's of a name TF1 shares (sl.metrics.mean_squared_error)
        Metric.__init__(self, name=name, dtype=dtype)  # Keras 3: "mean_metric_wrapper" by default
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
