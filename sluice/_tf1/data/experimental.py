"""`sl.data.experimental`: the few names TF1 pipelines use from `tf.data.experimental`."""

from __future__ import annotations

import numpy as np

from sluice._export import export
from sluice._tf1.data.dataset import INFINITE, UNKNOWN, Dataset
from sluice._tf1.data.transformations import AUTOTUNE
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core.core_ops import constant

INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN
export("data.experimental.INFINITE_CARDINALITY")(INFINITE_CARDINALITY)
export("data.experimental.UNKNOWN_CARDINALITY")(UNKNOWN_CARDINALITY)
export("data.experimental.AUTOTUNE")(AUTOTUNE)


@export("data.experimental.cardinality")
def cardinality(dataset: Dataset) -> Tensor:
    """The number of elements of `dataset` as an int64 scalar tensor: INFINITE_CARDINALITY for
    one that never ends, UNKNOWN_CARDINALITY where only running it tells (`filter`, a
    generator, a placeholder's length), as TF1.15's `tf.data.experimental.cardinality`.

    >>> import sluice as sl
    >>> with sl.Session() as sess:
    ...     print(sess.run(cardinality(sl.data.Dataset.range(10).batch(4))))
    3
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"cardinality: expected a sl.data.Dataset, got {dataset!r}.")
    return constant(np.int64(dataset._cardinality()), name="Cardinality")


__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality"]
