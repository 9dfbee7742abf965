"""`sl.data.experimental`: the few names TF1 pipelines use from `tf.data.experimental`.

The implementation is sluice/_tf1/data/experimental.py."""

from sluice._tf1.data.experimental import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    cardinality,
)

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality"]
