"""Weight constraints after an optimizer step: a variable with a `constraint` (Keras's
`add_weight(constraint=...)`, TF1's `Variable(constraint=...)`) is written its projected new
value, `constraint(new)`, as Keras's `_apply_weight_constraints` assigns
`variable.constraint(variable)` after every update and TF1's optimizers project after theirs.
A Keras weight's constraint is kept by its state cell too (`constrain`), so that its mirror in
another graph (a GAN's combined model) is projected the same way.

>>> w = sl.Variable([3.0, -1.0], constraint=lambda v: sl.maximum(v, 0.0))
>>> step = sl.train.GradientDescentOptimizer(1.0).minimize(sl.reduce_sum(w))
>>> with sl.Session() as sess:
...     sess.run(sl.global_variables_initializer())
...     _ = sess.run(step)
...     sess.run(w)
array([2., 0.], dtype=float32)
"""

from __future__ import annotations

import weakref
from typing import Any

from sluice.framework import state_cells
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core import core_ops

# a Keras weight's state cell -> its constraint
_BY_CELL: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def constrain(variable: Any, constraint: Any) -> None:
    """Records `constraint` for the state cell of `variable` (a Keras weight), so that every
    graph's mirror of it is projected; nothing for None or a variable without a cell."""
    cell = state_cells.cell_of(variable)
    if constraint is not None and cell is not None:
        _BY_CELL[cell] = constraint


def constraint_of(variable: Any) -> Any:
    """The constraint of `variable`: its own, else its state cell's; None when it has none."""
    constraint = getattr(variable, "constraint", None)
    if constraint is None:
        cell = state_cells.cell_of(variable)
        constraint = _BY_CELL.get(cell) if cell is not None else None
    return constraint


def constrained(variable: Any, new_value: Tensor) -> Tensor:
    """`new_value` projected by the constraint of `variable` when it has one, else `new_value`.

    Raises:
      ValueError: the constraint returns another dtype or shape than the variable's.
    """
    constraint = constraint_of(variable)
    if constraint is None:
        return new_value
    with graph_lib.name_scope(None, "constraint", [new_value]):
        projected = core_ops.convert_to_tensor(constraint(new_value))
    if projected.dtype != new_value.dtype or not projected.shape.is_compatible_with(
        new_value.shape
    ):
        raise ValueError(
            f"The constraint {constraint!r} of {variable.op.name} returned "
            f"{projected.dtype.name}{projected.shape}; the variable is "
            f"{new_value.dtype.name}{new_value.shape}."
        )
    return projected
