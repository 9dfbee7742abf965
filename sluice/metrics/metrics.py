"""Keras 3 metrics, kept in graph Variables: `update_state` builds an op adding a batch to the
running state, `result()` a Tensor reading it, `reset_state()` zeroes it (host-side).

Mean-type metrics keep `total` and `count`: each update adds sum(values * weights) and
sum(weights), where the weights are the sample weights broadcast over the values and a Keras
mask on y_pred (so a masked sequence counts only its valid steps). The state lives in
`metrics/<name>/total` and `metrics/<name>/count` of the model's graph, so a BackupAndRestore
checkpoint taken mid-epoch carries the running averages too.

>>> model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sluice.cells.scopes import snake_case
from sluice.framework.ir import dtypes
from sluice.framework.ops import core_ops, fill_ops, math_ops, reduction_ops, unary_ops
from sluice.framework.variables import Variable
from sluice.layers import runtime
from sluice.layers.tracking import get_mask, graph_of
from sluice.losses import losses as losses_lib

class Metric:
    """Base class: subclasses create state with `add_variable` (from `build_state`) and define
    `update_state(...) -> Operation` and `result() -> Tensor`."""

    def __init__(self, name: str | None = None, dtype: Any = None):
        self.name = name or snake_case(type(self).__name__)
        self.dtype = dtypes.as_dtype(dtype or "float32")
        self._variables: list[Variable] = []
        self._graph = None

    @property
    def variables(self) -> list[Variable]:
        return list(self._variables)

    def add_variable(self, name: str) -> Variable:
        """A zero scalar state Variable `metrics/<metric name>/<name>` in the metric's graph."""
        g = self._graph
        with g.as_default(), g.name_scope(None):
            var = Variable(
                np.zeros([], self.dtype), trainable=False, name=f"metrics/{self.name}/{name}"
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
                self._variables, [np.zeros([], v.dtype) for v in self._variables]
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
            values, weight = losses_lib.squeeze_or_expand_to_same_rank(values, weight)
            weight = losses_lib._broadcast_weight(weight, values) * fill_ops.ones_like(values)
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
        if not self._mean:
            return self.total.value()
        count = self.count.value()
        return self.total.value() / math_ops.maximum(
            count, core_ops.convert_to_tensor(1e-12, dtype=count.dtype)
        )


class Mean(_Reduce):
    """The (weighted) mean of the values seen."""


class Sum(_Reduce):
    """The (weighted) sum of the values seen."""

    _mean = False


class MeanMetricWrapper(Mean):
    """The mean of `fn(y_true, y_pred, **kwargs)` over every sample (and valid step) seen."""

    def __init__(self, fn: Callable, name: str | None = None, dtype: Any = None, **kwargs: Any):
        super().__init__(name=name or fn.__name__, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_pred = core_ops.convert_to_tensor(y_pred)
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        mask = get_mask(y_pred)
        if mask is not None:
            mask = fill_ops.cast(mask, self.dtype)
            if sample_weight is not None:
                sw = fill_ops.cast(core_ops.convert_to_tensor(sample_weight), self.dtype)
                mask = mask * losses_lib._broadcast_weight(sw, mask)
            sample_weight = mask
        return super().update_state(values, sample_weight)

    def get_config(self) -> dict:
        return {**super().get_config(), **self._fn_kwargs}


class RootMeanSquaredError(Mean):
    """sqrt of the mean squared error over every value seen."""

    def __init__(self, name: str = "root_mean_squared_error", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true, y_pred = losses_lib._prepare(y_true, y_pred)
        return super().update_state(math_ops.squared_difference(y_true, y_pred), sample_weight)

    def result(self) -> Any:
        return unary_ops.sqrt(super().result())

    def value(self) -> float:
        return float(np.sqrt(super().value()))


# -- metric functions -----------------------------------------------------------------------------
def _float(x: Any) -> Any:
    return fill_ops.cast(x, dtypes.float32)


def accuracy(y_true: Any, y_pred: Any) -> Any:
    """1 where y_pred equals y_true exactly (elementwise, as floats), mean over the last axis."""
    y_true, y_pred = losses_lib._prepare(y_true, y_pred)
    return reduction_ops.reduce_mean(_float(math_ops.equal(y_true, y_pred)), axis=-1)


def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> Any:
    """1 where (y_pred > threshold) matches y_true, mean over the last axis."""
    y_true, y_pred = losses_lib._prepare(y_true, y_pred)
    predicted = fill_ops.cast(
        math_ops.greater(y_pred, core_ops.convert_to_tensor(threshold, dtype=y_pred.dtype)),
        y_pred.dtype,
    )
    return reduction_ops.reduce_mean(_float(math_ops.equal(y_true, predicted)), axis=-1)


def categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1 where argmax(y_pred) == argmax(y_true) (one-hot targets)."""
    y_pred = core_ops.convert_to_tensor(y_pred)
    y_true = core_ops.convert_to_tensor(y_true)
    return _float(
        math_ops.equal(reduction_ops.argmax(y_true, -1), reduction_ops.argmax(y_pred, -1))
    )


def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1 where argmax(y_pred) equals the integer class id y_true."""
    y_pred = core_ops.convert_to_tensor(y_pred)
    y_true = losses_lib.sparse_ids(y_true, y_pred, "sparse_categorical_accuracy")
    predicted = reduction_ops.argmax(y_pred, -1)
    return _float(math_ops.equal(fill_ops.cast(y_true, predicted.dtype), predicted))


def _wrapper_class(class_name: str, fn: Callable, default_name: str, **defaults: Any):
    def __init__(self, name: str = default_name, dtype: Any = None, **kwargs: Any):
        MeanMetricWrapper.__init__(self, fn, name=name, dtype=dtype, **{**defaults, **kwargs})

    cls = type(class_name, (MeanMetricWrapper,), {"__init__": __init__})
    cls.__doc__ = f"The mean of `{fn.__name__}` over the samples seen (named {default_name!r})."
    return cls


Accuracy = _wrapper_class("Accuracy", accuracy, "accuracy")
BinaryAccuracy = _wrapper_class("BinaryAccuracy", binary_accuracy, "binary_accuracy", threshold=0.5)
CategoricalAccuracy = _wrapper_class(
    "CategoricalAccuracy", categorical_accuracy, "categorical_accuracy"
)
SparseCategoricalAccuracy = _wrapper_class(
    "SparseCategoricalAccuracy", sparse_categorical_accuracy, "sparse_categorical_accuracy"
)
MeanSquaredError = _wrapper_class(
    "MeanSquaredError", losses_lib.mean_squared_error, "mean_squared_error"
)
MeanAbsoluteError = _wrapper_class(
    "MeanAbsoluteError", losses_lib.mean_absolute_error, "mean_absolute_error"
)

_CLASSES = {
    c.__name__: c
    for c in (
        Mean, Sum, Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
        MeanSquaredError, MeanAbsoluteError, RootMeanSquaredError,
    )
}  # fmt: skip
_FUNCTIONS = {
    "binary_accuracy": binary_accuracy, "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "mse": losses_lib.mean_squared_error, "mean_squared_error": losses_lib.mean_squared_error,
    "mae": losses_lib.mean_absolute_error, "mean_absolute_error": losses_lib.mean_absolute_error,
    "binary_crossentropy": losses_lib.binary_crossentropy,
    "categorical_crossentropy": losses_lib.categorical_crossentropy,
    "sparse_categorical_crossentropy": losses_lib.sparse_categorical_crossentropy,
}  # fmt: skip


def get(identifier: Any, y_true: Any = None, y_pred: Any = None, loss: Any = None) -> Metric:
    """A Metric from a name, a config dict, a Metric (as is) or a function.

    "accuracy" / "acc" pick the accuracy that fits the targets and the loss, as Keras does:
    binary when y_pred has one unit per sample, sparse categorical for integer ids (targets
    with one axis fewer than y_pred, or a last axis of 1), categorical otherwise.
    """
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        if identifier in ("accuracy", "acc"):
            fn = _pick_accuracy(y_true, y_pred, loss)
            return MeanMetricWrapper(fn, name=identifier)
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        if identifier in _FUNCTIONS:
            return MeanMetricWrapper(_FUNCTIONS[identifier], name=identifier)
        raise ValueError(
            f"Unknown metric {identifier!r}; known: {sorted(_FUNCTIONS) + sorted(_CLASSES) + ['accuracy']}."
        )
    if isinstance(identifier, dict) and identifier.get("class_name") in _CLASSES:
        return _CLASSES[identifier["class_name"]].from_config(identifier.get("config", {}))
    if callable(identifier):
        return MeanMetricWrapper(identifier, name=getattr(identifier, "__name__", None))
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}.")


def _pick_accuracy(y_true: Any, y_pred: Any, loss: Any) -> Callable:
    loss_fn = getattr(loss, "fn", loss)
    if loss_fn is losses_lib.binary_crossentropy or (y_pred is not None and y_pred.shape[-1] == 1):
        return binary_accuracy
    if loss_fn is losses_lib.sparse_categorical_crossentropy:
        return sparse_categorical_accuracy
    if loss_fn is losses_lib.categorical_crossentropy:
        return categorical_accuracy
    if (
        y_true is not None
        and y_pred is not None
        and (y_true.shape.rank == y_pred.shape.rank - 1 or y_true.shape[-1] == 1)
    ):
        return sparse_categorical_accuracy
    return categorical_accuracy
