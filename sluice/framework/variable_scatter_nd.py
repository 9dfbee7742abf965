"""TF1's `scatter_nd_update`, `scatter_nd_add` and `scatter_nd_sub` on variables: the variable is
assigned its value with the slices at the index tuples written, added or subtracted
(TensorScatterUpdate/Add/Sub); each returns the new value, as `sl.scatter_update` does.

>>> v = sl.Variable([1.0, 2.0, 3.0, 4.0])
>>> add = sl.scatter_nd_add(v, [[1], [1], [3]], [10.0, 5.0, 1.0])
>>> with sl.Session() as sess:
...     sess.run(v.initializer)
...     print(sess.run(add))
[ 1. 17.  3.  5.]
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import scatter_nd_ops
from sluice.framework.variable_updates import assign
from sluice.framework.variables import Variable


def _scatter_nd(function: str, combine, ref: Any, indices: Any, updates: Any, name) -> Tensor:
    if not isinstance(ref, Variable):
        raise TypeError(
            f"{function}: ref must be a sl.Variable, got {type(ref).__name__} "
            f"({ref!r}); a plain Tensor cannot be assigned to."
        )
    return assign(ref, combine(ref.value(), indices, updates), name=name)


@export("scatter_nd_update")
def scatter_nd_update(
    ref: Variable, indices: Any, updates: Any, use_locking: bool = True, name: str | None = None
) -> Tensor:
    """`ref[indices[i]] = updates[i]` for index tuples `indices[i]` (TF1 `tf.scatter_nd_update`);
    returns the new value. With repeated index tuples one update wins."""
    del use_locking
    return _scatter_nd(
        "scatter_nd_update", scatter_nd_ops.tensor_scatter_nd_update, ref, indices, updates, name
    )


@export("scatter_nd_add")
def scatter_nd_add(
    ref: Variable, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """`ref[indices[i]] += updates[i]`, repeated index tuples adding up (TF1
    `tf.scatter_nd_add`); returns the new value."""
    del use_locking
    return _scatter_nd(
        "scatter_nd_add", scatter_nd_ops.tensor_scatter_nd_add, ref, indices, updates, name
    )


@export("scatter_nd_sub")
def scatter_nd_sub(
    ref: Variable, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """`ref[indices[i]] -= updates[i]` (TF1 `tf.scatter_nd_sub`); returns the new value."""
    del use_locking
    return _scatter_nd(
        "scatter_nd_sub", scatter_nd_ops.tensor_scatter_nd_sub, ref, indices, updates, name
    )
