"""The option values of `gradients` that TF1 names: `AggregationMethod`, `UnconnectedGradients`.

Both are checked when `gradients` is called, so a misspelt option fails where it was written.
"""

from __future__ import annotations

import enum
from typing import Any

from sluice._export import export


@export("AggregationMethod")
class AggregationMethod:
    """How `gradients` sums the gradients that reach one tensor from several consumers (TF1's
    `tf.AggregationMethod`).

    Every method gives the same sum; TF1's differ only in when they free memory, which XLA
    decides here. `DEFAULT` is `ADD_N`.

    >>> x = sl.constant(2.0)
    >>> y = x * x + x
    >>> (dx,) = sl.gradients(y, x, aggregation_method=sl.AggregationMethod.EXPERIMENTAL_TREE)
    >>> print(sl.Session().run(dx))
    5.0
    """

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


_AGGREGATION_METHODS = (
    AggregationMethod.ADD_N,
    AggregationMethod.EXPERIMENTAL_TREE,
    AggregationMethod.EXPERIMENTAL_ACCUMULATE_N,
)


def check_aggregation_method(method: Any) -> None:
    """Raises ValueError, as TF1 does, for anything but None and an `AggregationMethod` value."""
    if method is None:
        return
    if isinstance(method, bool) or method not in _AGGREGATION_METHODS:
        raise ValueError(
            f"Invalid aggregation_method specified {method!r}: expected None or one "
            "of sl.AggregationMethod.ADD_N, DEFAULT, EXPERIMENTAL_TREE, "
            "EXPERIMENTAL_ACCUMULATE_N."
        )


@export("UnconnectedGradients")
class UnconnectedGradients(str, enum.Enum):
    """What `gradients` returns for an x with no path to the ys (TF1's
    `tf.UnconnectedGradients`): `NONE` gives None, `ZERO` a zero tensor shaped like x. The
    values equal the strings "none" and "zero", which `gradients` accepts too.

    >>> x, y = sl.constant(1.0), sl.constant(2.0)
    >>> sl.gradients(y, x, unconnected_gradients=sl.UnconnectedGradients.NONE)
    [None]
    """

    NONE = "none"
    ZERO = "zero"


def as_unconnected_gradients(value: Any) -> UnconnectedGradients:
    """`value` as an `UnconnectedGradients`; ValueError for anything else."""
    try:
        return UnconnectedGradients(value)
    except ValueError:
        raise ValueError(
            f"Unknown value for unconnected_gradients: {value!r}; expected "
            "sl.UnconnectedGradients.NONE or ZERO ('none' or 'zero')."
        ) from None
