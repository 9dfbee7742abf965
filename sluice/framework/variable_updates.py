"""TF1's module-level variable functions (`tf.compat.v1.assign`, `scatter_update`, ...).

Each returns the variable's new value as a Tensor, so `sess.run(sl.assign_add(v, 1.0))` gives the
value after the update, as TF1's `ref` results do. They work on `sl.Variable` (resource
semantics); anything else is refused with a TypeError naming the function.

>>> v = sl.Variable([1.0, 2.0, 3.0], name="v")
>>> add = sl.scatter_add(v, [0, 0], [10.0, 5.0])
>>> with sl.Session() as sess:
...     sess.run(v.initializer)
...     print(sess.run(add))
[16.  2.  3.]
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import as_int_tensor
from sluice.framework.variables import Variable, global_variables, local_variables


def _require_variable(ref: Any, function: str) -> Variable:
    if not isinstance(ref, Variable):
        raise TypeError(
            f"{function}: ref must be a sl.Variable, got {type(ref).__name__} ({ref!r}); sluice "
            "variables are resource variables, and a plain Tensor cannot be assigned to."
        )
    return ref


@export("assign")
def assign(
    ref: Variable,
    value: Any,
    validate_shape: bool | None = None,
    use_locking: bool | None = None,
    name: str | None = None,
) -> Tensor:
    """Writes `value` into `ref`; returns the new value (TF1 `tf.assign`).

    As for TF1 resource variables, `validate_shape` and `use_locking` are accepted and have no
    effect: the value must fit the variable's shape (a variable made with `validate_shape=False`
    has no fixed shape, so it takes any).
    """
    del validate_shape, use_locking
    return _require_variable(ref, "assign").assign(value, name=name)


@export("assign_add")
def assign_add(
    ref: Variable, value: Any, use_locking: bool | None = None, name: str | None = None
) -> Tensor:
    """`ref += value`; returns the new value (TF1 `tf.assign_add`)."""
    del use_locking
    return _require_variable(ref, "assign_add").assign_add(value, name=name)


@export("assign_sub")
def assign_sub(
    ref: Variable, value: Any, use_locking: bool | None = None, name: str | None = None
) -> Tensor:
    """`ref -= value`; returns the new value (TF1 `tf.assign_sub`)."""
    del use_locking
    return _require_variable(ref, "assign_sub").assign_sub(value, name=name)


def _scatter(
    op_type: str, function: str, ref: Any, indices: Any, updates: Any, name: str | None
) -> Tensor:
    ref = _require_variable(ref, function)
    g = ref.graph
    if g is not graph_lib.get_default_graph():
        raise ValueError(f"{function}: variable {ref.name} is not in the default graph.")
    indices = as_int_tensor(indices, f"{function}'s indices")
    # a Tensor keeps its dtype, so a mismatch is reported by the op; Python values take ref's
    is_tensor = isinstance(updates, Tensor) or hasattr(updates, "_as_tensor")
    updates = core_ops.convert_to_tensor(updates, dtype=None if is_tensor else ref.dtype)
    attrs = {"dtype": ref.dtype, "shape": ref.shape}
    inputs = [ref.handle, indices, updates]
    return g.create_op(op_type, inputs, attrs, name=name or op_type).outputs[0]


@export("scatter_update")
def scatter_update(
    ref: Variable, indices: Any, updates: Any, use_locking: bool = True, name: str | None = None
) -> Tensor:
    """`ref[indices[i], ...] = updates[i, ...]`; returns the new value (TF1 `tf.scatter_update`).

    `updates` has shape `indices.shape + ref.shape[1:]` or is a scalar. With repeated indices,
    one of the updates wins (which one is not specified, as in TF). An index outside
    `[0, ref.shape[0])` raises when it is known (always in the interpreted engine); a traced one
    in the compiled engine changes nothing, as on TF's GPUs.
    """
    del use_locking
    return _scatter("ResourceScatterUpdate", "scatter_update", ref, indices, updates, name)


@export("scatter_add")
def scatter_add(
    ref: Variable, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """`ref[indices[i], ...] += updates[i, ...]`, repeated indices adding up (TF1
    `tf.scatter_add`); see `scatter_update` for shapes and indices."""
    del use_locking
    return _scatter("ResourceScatterAdd", "scatter_add", ref, indices, updates, name)


@export("scatter_sub")
def scatter_sub(
    ref: Variable, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """`ref[indices[i], ...] -= updates[i, ...]`, repeated indices adding up (TF1
    `tf.scatter_sub`); see `scatter_update` for shapes and indices."""
    del use_locking
    return _scatter("ResourceScatterSub", "scatter_sub", ref, indices, updates, name)


@export("report_uninitialized_variables")
def report_uninitialized_variables(
    var_list: list[Variable] | None = None, name: str = "report_uninitialized_variables"
) -> Tensor:
    """A 1-D tensor of the names (`v.op.name`, as bytes) of the variables in `var_list` that have
    no value yet; by default the global and local variables (TF1 semantics).

    A string tensor: the fetched value is a NumPy array of `bytes` with object dtype, as TF's
    string fetches are. The op runs on the host (interpreted).

    >>> a, b = sl.Variable(1.0, name="a"), sl.Variable(2.0, name="b")
    >>> report = sl.report_uninitialized_variables()
    >>> with sl.Session() as sess:
    ...     sess.run(a.initializer)
    ...     print(sess.run(report))
    [b'b']
    """
    if var_list is None:
        var_list = global_variables() + local_variables()
    handles = [_require_variable(v, "report_uninitialized_variables").handle for v in var_list]
    g = graph_lib.get_default_graph()
    with g.control_dependencies(None):
        return g.create_op("ReportUninitializedVariables", handles, {}, name=name).outputs[0]
