"""`cond`: a two-way branch built from Switch and Merge (whitepaper §3)."""

from __future__ import annotations

from typing import Any, Callable

import jax
import numpy as np

from sluice._export import export
from sluice.framework.control_flow import nesting, tensor_array
from sluice.framework.control_flow.cond_context import CondContext
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ops.control.control_flow_ops import merge, switch
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math.indexed_slices import IndexedSlices, as_indexed_slices


@export("cond")
def cond(
    pred: Any,
    true_fn: Callable[[], Any] | None = None,
    false_fn: Callable[[], Any] | None = None,
    strict: bool = False,
    name: str | None = None,
) -> Any:
    """Returns `true_fn()` if `pred` is true else `false_fn()`, as graph ops.

    Semantics, as plain Python (only the taken branch's ops run)::

        def cond(pred, true_fn, false_fn):
            return true_fn() if pred else false_fn()

    Both functions are called once, while the graph is built; each builds its ops in its own
    branch context. Tensors a branch uses from outside go through a Switch, so the branch's ops
    run only when it is taken. Note: ops created *outside* the branch functions always run, even
    when only one branch uses them (`y = sl.square(x); sl.cond(p, lambda: y, ...)` computes `y`
    whatever `p` is) -- create them inside the function to make them conditional.

    Args:
      pred: a scalar bool Tensor.
      true_fn, false_fn: callables returning the same nested structure of Tensors (or
        Operations) with matching dtypes.
      strict: when False, a result that is a one-element list or tuple is unpacked.
      name: name scope for the ops.

    Returns:
      The merged results, in the structure the branches return.

    Raises:
      TypeError: `pred` is a Python bool or not a bool scalar, a function is not callable, or the
        branches return different dtypes.
      ValueError: the branches return different structures.

    >>> x, y = sl.constant(2.0), sl.constant(5.0)
    >>> z = sl.cond(x < y, lambda: x + 1.0, lambda: y * y)
    >>> print(sl.Session().run(z))
    3.0
    """
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("sl.cond: true_fn and false_fn must both be callables.")
    if isinstance(pred, (bool, np.bool_)):
        # As TF1: a Python bool is known while building; `true_fn() if pred else false_fn()`
        # says what is meant without building both branches.
        raise TypeError("sl.cond: pred must not be a Python bool; use a bool Tensor.")
    pred = core_ops.convert_to_tensor(pred)
    g = pred.graph
    if pred.dtype != dtypes.bool_:
        raise TypeError(
            f"sl.cond: pred must be a bool tensor, got {pred.dtype.name} ({pred.name})."
        )
    if pred.shape.rank not in (None, 0):
        raise ValueError(f"sl.cond: pred must be a scalar, got shape {pred.shape} ({pred.name}).")
    with g.name_scope(name or "cond") as scope:
        p_false, p_true = switch(pred, pred)
        pivot_true = core_ops.identity(p_true, name="switch_t")
        pivot_false = core_ops.identity(p_false, name="switch_f")
        pred_id = core_ops.identity(pred, name="pred_id")
        originals, contexts, gradients = [], [], {}
        for branch, fn, pivot in ((1, true_fn, pivot_true), (0, false_fn, pivot_false)):
            ctx = CondContext(g, pred_id, pivot, branch, scope[:-1], gradients)
            with ctx:
                originals.append(fn())
            contexts.append(ctx)
        originals = _with_matching_indices(originals, contexts)
        results = []
        for original, ctx in zip(originals, contexts):
            with ctx:
                results.append(_branch_outputs(original, ctx))
        (true_leaves, true_tree, true_orig), (false_leaves, false_tree, false_orig) = results
        if true_tree != false_tree:
            raise nesting.structure_error(
                "sl.cond: true_fn and false_fn must return the same structure.",
                originals[0],
                originals[1],
                nesting.mismatch(originals[0], originals[1])
                or f"the trees differ: {true_tree} and {false_tree}.",
            )
        merged: list[Any] = []
        for i, (t, f) in enumerate(zip(true_leaves, false_leaves)):
            if t.dtype != f.dtype:
                raise TypeError(
                    f"sl.cond: output {i} has dtype {t.dtype.name} in true_fn but "
                    f"{f.dtype.name} in false_fn; both branches must return matching dtypes."
                )
            value, _ = merge([f, t], name="Merge")
            merged.append(value.op if _returns_op(true_orig, i) else value)
    tensor_array.require_same_kinds(true_orig, false_orig, "sl.cond: true_fn and false_fn")
    out = jax.tree_util.tree_unflatten(true_tree, tensor_array.rebuild_like(true_orig, merged))
    if (
        not strict
        and isinstance(out, (list, tuple))
        and len(out) == 1
        and not hasattr(out, "_fields")
    ):
        return out[0]
    return out


def _branch_outputs(original: Any, ctx: CondContext) -> tuple[list[Tensor], Any, list]:
    """Each branch result as a Tensor built inside the branch (so it is dead when not taken)."""
    if original is None:
        raise ValueError("sl.cond: a branch function returned None; it must return its results.")
    leaves, tree = jax.tree_util.tree_flatten(original, is_leaf=_is_output_leaf)
    tensors = []
    for leaf in leaves:
        if isinstance(leaf, Operation):
            with ctx.graph.control_dependencies([leaf]):
                tensors.append(core_ops.identity(ctx.pivot))
        else:
            tensors.append(
                core_ops.identity(core_ops.convert_to_tensor(tensor_array.flows_of([leaf])[0]))
            )
    return tensors, tree, leaves


def _with_matching_indices(originals: list, contexts: list) -> list:
    """As TF1 (`_cast_indexed_slice_indices`): IndexedSlices that the two branches return at the
    same place with int32 and int64 indices both get int64 indices (cast inside the branch)."""
    if originals[0] is None or originals[1] is None:
        return originals  # _branch_outputs says which branch returned nothing
    leaves = [jax.tree_util.tree_flatten(o, is_leaf=_is_user_leaf) for o in originals]
    if leaves[0][1] != leaves[1][1]:
        return originals  # different structures: the structure check below says so
    for i, (t, f) in enumerate(zip(leaves[0][0], leaves[1][0])):
        if (
            isinstance(t, IndexedSlices)
            and isinstance(f, IndexedSlices)
            and t.indices.dtype != f.indices.dtype
        ):
            for side, ctx in zip(leaves, contexts):
                with ctx:
                    side[0][i] = as_indexed_slices(side[0][i], dtypes.int64)
    return [jax.tree_util.tree_unflatten(tree, flat) for flat, tree in leaves]


def _returns_op(leaves: list, index: int) -> bool:
    return isinstance(leaves[index], Operation)


def _is_output_leaf(x: Any) -> bool:
    # IndexedSlices are not leaves: values, indices and dense_shape are merged each (TF1), and
    # the pytree puts them together again.
    return (
        isinstance(x, (Tensor, Operation))
        or hasattr(x, "_as_tensor")
        and not isinstance(x, IndexedSlices)
        or tensor_array.is_tensor_array(x)
    )


def _is_user_leaf(x: Any) -> bool:
    return _is_output_leaf(x) or isinstance(x, IndexedSlices)
