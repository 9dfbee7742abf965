"""Keras 3's metrics of one rate at a bound on another: the best value of one rate over the
thresholds where the other reaches a given value, from the confusion counts at `num_thresholds`
evenly spaced thresholds of [0, 1] (one, 0.5, when num_thresholds is 1):

    SensitivityAtSpecificity(s)   max tp / (tp + fn)  over thresholds with tn / (tn + fp) >= s
    SpecificityAtSensitivity(s)   max tn / (tn + fp)  over thresholds with tp / (tp + fn) >= s
    PrecisionAtRecall(r)          max tp / (tp + fp)  over thresholds with tp / (tp + fn) >= r
    RecallAtPrecision(p)          max tp / (tp + fn)  over thresholds with tp / (tp + fp) >= p

(0 when no threshold qualifies; each ratio 0 where it is 0 / 0).

>>> m = sl.metrics.SensitivityAtSpecificity(0.5)
>>> m.update_state([0, 0, 0, 1, 1], [0, 0.3, 0.8, 0.3, 0.8])
>>> print(m.result())   # Keras 3's example
0.5
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.metrics.confusion_metrics import confusion_counts
from sluice._keras.metrics.metric import Metric
from sluice.framework.ops.array import fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import division_ops, math_ops, reduction_ops


class _RateAtRate(Metric):
    """The four confusion counts per threshold; `result` searches them (see the docstring)."""

    _bound = ""  # the constructor argument holding the bound (its name in the config)

    def __init__(
        self,
        bound: float,
        num_thresholds: int = 200,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ):
        if not 0 <= bound <= 1:
            raise ValueError(
                f"Argument `{self._bound}` must be in the range [0, 1]. "
                f"Received: {self._bound}={bound}"
            )
        if num_thresholds <= 0:
            raise ValueError(
                "Argument `num_thresholds` must be an integer > 0. "
                f"Received: num_thresholds={num_thresholds}"
            )
        super().__init__(name=name, dtype=dtype)
        self.bound = bound
        setattr(self, self._bound, bound)
        self.num_thresholds = num_thresholds
        self.class_id = class_id
        if num_thresholds == 1:
            self.thresholds = [0.5]
        else:
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self.thresholds = [0.0] + inner + [1.0]

    def build_state(self) -> None:
        shape = (len(self.thresholds),)
        for cell in ("true_positives", "false_positives", "true_negatives", "false_negatives"):
            setattr(self, cell, self.add_variable(name=cell, shape=shape))

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_pred = core_ops.convert_to_tensor(y_pred)
        self._ensure_state([y_pred])
        counts = confusion_counts(
            y_true, y_pred, self.thresholds, self.dtype, sample_weight,
            class_id=self.class_id, what=f"{self.name!r}",
        )  # fmt: skip
        cells = {
            "tp": self.true_positives,
            "fp": self.false_positives,
            "tn": self.true_negatives,
            "fn": self.false_negatives,
        }
        return core_ops.group(
            *(v.assign_add(counts[k], read_value=False) for k, v in cells.items())
        )

    def _rates(self) -> dict[str, Any]:
        tp, fp, tn, fn = (
            v.value()
            for v in (self.true_positives, self.false_positives, self.true_negatives,
                      self.false_negatives)
        )  # fmt: skip
        return {
            "sensitivity": division_ops.div_no_nan(tp, tp + fn),
            "specificity": division_ops.div_no_nan(tn, tn + fp),
            "precision": division_ops.div_no_nan(tp, tp + fp),
        }

    def _best(self, constrained: Any, dependent: Any) -> Any:
        """max of `dependent` where `constrained` >= the bound, 0 if nowhere."""
        feasible = math_ops.greater_equal(constrained, self.bound)
        zero = fill_ops.zeros_like(dependent)
        return reduction_ops.reduce_max(gather_ops.where_v2(feasible, dependent, zero))

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "class_id": self.class_id,
            "num_thresholds": self.num_thresholds,
            self._bound: self.bound,
        }


@export("metrics.SensitivityAtSpecificity")
class SensitivityAtSpecificity(_RateAtRate):
    """The best sensitivity (recall) where the specificity is at least `specificity`."""

    _bound = "specificity"

    def __init__(
        self,
        specificity: float,
        num_thresholds: int = 200,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(specificity, num_thresholds, class_id, name, dtype)

    def result(self) -> Any:
        rates = self._rates()
        return self._best(rates["specificity"], rates["sensitivity"])


@export("metrics.SpecificityAtSensitivity")
class SpecificityAtSensitivity(_RateAtRate):
    """The best specificity where the sensitivity (recall) is at least `sensitivity`."""

    _bound = "sensitivity"

    def __init__(
        self,
        sensitivity: float,
        num_thresholds: int = 200,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)

    def result(self) -> Any:
        rates = self._rates()
        return self._best(rates["sensitivity"], rates["specificity"])


@export("metrics.PrecisionAtRecall")
class PrecisionAtRecall(_RateAtRate):
    """The best precision where the recall is at least `recall`.

    >>> m = sl.metrics.PrecisionAtRecall(0.5)
    >>> m.update_state([0, 0, 0, 1, 1], [0, 0.3, 0.8, 0.3, 0.8], sample_weight=[2, 2, 2, 1, 1])
    >>> print(np.round(m.result(), 6))   # Keras 3's example
    0.333333
    """

    _bound = "recall"

    def __init__(
        self,
        recall: float,
        num_thresholds: int = 200,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(recall, num_thresholds, class_id, name, dtype)

    def result(self) -> Any:
        rates = self._rates()
        return self._best(rates["sensitivity"], rates["precision"])


@export("metrics.RecallAtPrecision")
class RecallAtPrecision(_RateAtRate):
    """The best recall where the precision is at least `precision`."""

    _bound = "precision"

    def __init__(
        self,
        precision: float,
        num_thresholds: int = 200,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(precision, num_thresholds, class_id, name, dtype)

    def result(self) -> Any:
        rates = self._rates()
        return self._best(rates["precision"], rates["sensitivity"])
