"""Keras 3's probabilistic metrics: the means of the probabilistic losses over every sample seen
(cross-entropies, Kullback-Leibler divergence, Poisson), and of the hinge losses.

>>> m = sl.metrics.BinaryCrossentropy()
>>> m.update_state([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]])
>>> print(np.round(m.result(), 6))   # Keras 3's example: 0.81492424
0.814924
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.losses import hinge, probabilistic
from sluice._keras.metrics.metric import MeanMetricWrapper


@export("metrics.KLDivergence")
class KLDivergence(MeanMetricWrapper):
    """The mean Kullback-Leibler divergence of y_pred from y_true."""

    def __init__(self, name: str = "kl_divergence", dtype: Any = None):
        super().__init__(probabilistic.kl_divergence, name=name, dtype=dtype)


@export("metrics.Poisson")
class Poisson(MeanMetricWrapper):
    """The mean of y_pred - y_true * log(y_pred)."""

    def __init__(self, name: str = "poisson", dtype: Any = None):
        super().__init__(probabilistic.poisson, name=name, dtype=dtype)


@export("metrics.BinaryCrossentropy")
class BinaryCrossentropy(MeanMetricWrapper):
    """The mean binary cross-entropy (see `sl.losses.binary_crossentropy`)."""

    def __init__(
        self,
        name: str = "binary_crossentropy",
        dtype: Any = None,
        from_logits: bool = False,
        label_smoothing: float = 0.0,
    ):
        super().__init__(
            probabilistic.binary_crossentropy, name=name, dtype=dtype,
            from_logits=from_logits, label_smoothing=label_smoothing,
        )  # fmt: skip
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing


@export("metrics.CategoricalCrossentropy")
class CategoricalCrossentropy(MeanMetricWrapper):
    """The mean categorical cross-entropy (see `sl.losses.categorical_crossentropy`).

    >>> m = sl.metrics.CategoricalCrossentropy()
    >>> m.update_state([[0, 1, 0], [0, 0, 1]], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]],
    ...                sample_weight=np.array([0.3, 0.7]))
    >>> print(np.round(m.result(), 5))   # Keras 3's example: 1.6271976
    1.6272
    """

    def __init__(
        self,
        name: str = "categorical_crossentropy",
        dtype: Any = None,
        from_logits: bool = False,
        label_smoothing: float = 0.0,
        axis: int = -1,
    ):
        super().__init__(
            probabilistic.categorical_crossentropy, name=name, dtype=dtype,
            from_logits=from_logits, label_smoothing=label_smoothing, axis=axis,
        )  # fmt: skip
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing
        self.axis = axis


@export("metrics.SparseCategoricalCrossentropy")
class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """The mean sparse categorical cross-entropy over the samples (and kept ids) seen."""

    def __init__(
        self,
        name: str = "sparse_categorical_crossentropy",
        dtype: Any = None,
        from_logits: bool = False,
        ignore_class: int | None = None,
        axis: int = -1,
    ):
        super().__init__(
            probabilistic.sparse_categorical_crossentropy, name=name, dtype=dtype,
            from_logits=from_logits, ignore_class=ignore_class, axis=axis,
        )  # fmt: skip
        self.from_logits = from_logits
        self.ignore_class = ignore_class
        self.axis = axis


@export("metrics.Hinge")
class Hinge(MeanMetricWrapper):
    """The mean hinge loss (0/1 targets mapped to -1/1).

    >>> m = sl.metrics.Hinge()
    >>> m.update_state([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]], sample_weight=[1, 0])
    >>> print(np.round(m.result(), 6))   # Keras 3's example
    1.1
    """

    def __init__(self, name: str = "hinge", dtype: Any = None):
        super().__init__(hinge.hinge, name=name, dtype=dtype)


@export("metrics.SquaredHinge")
class SquaredHinge(MeanMetricWrapper):
    """The mean squared hinge loss."""

    def __init__(self, name: str = "squared_hinge", dtype: Any = None):
        super().__init__(hinge.squared_hinge, name=name, dtype=dtype)


@export("metrics.CategoricalHinge")
class CategoricalHinge(MeanMetricWrapper):
    """The mean categorical hinge loss."""

    def __init__(self, name: str = "categorical_hinge", dtype: Any = None):
        super().__init__(hinge.categorical_hinge, name=name, dtype=dtype)
