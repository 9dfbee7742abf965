"""`while_loop`: a loop built from Enter, Merge, Switch, NextIteration and Exit (whitepaper §4)."""

from __future__ import annotations

from typing import Any, Callable

import jax

from sluice._export import export
from sluice.framework.control_flow import nesting, tensor_array
from sluice.framework.control_flow.context import check_loop_input, may_use_in
from sluice.framework.control_flow.while_context import WhileContext
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import GraphKeys, Tensor
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ir.tensor_spec import TensorSpec
from sluice.framework.ops.control.control_flow_ops import merge, switch
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.math.indexed_slices import IndexedSlices
from sluice.framework.ops.sparse.sparse_tensor import SparseTensor, SparseTensorSpec


@export("while_loop")
def while_loop(
    cond: Callable[..., Any],
    body: Callable[..., Any],
    loop_vars: Any,
    shape_invariants: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
    maximum_iterations: Any = None,
    return_same_structure: bool = False,
    unroll: int = 1,
) -> Any:
    """Repeats `body` while `cond` is true, as one loop frame in the graph.

    Semantics, as plain Python::

        def while_loop(cond, body, loop_vars):
            while cond(*loop_vars):
                loop_vars = body(*loop_vars)
            return loop_vars

    `cond` and `body` are called once each, while the graph is built. Tensors they use from
    outside the loop become loop constants. Up to `parallel_iterations` iterations may be in
    flight at once; results do not depend on it.

    Args:
      cond: callable taking the loop variables and returning a scalar bool Tensor.
      body: callable taking the loop variables and returning new values, in the same (nested)
        structure, with the same dtypes and shapes (see `shape_invariants`).
      loop_vars: a Tensor, or a nested tuple/list/namedtuple/dict of Tensors.
      shape_invariants: the same structure of shapes that the loop variables may take, for
        variables whose shape changes between iterations (use None for unknown dimensions).
      parallel_iterations: iterations allowed to run concurrently.
      back_prop: whether gradients may flow through the loop.
      swap_memory: whether values saved for the gradient may be moved to host memory.
      name: name scope (and frame name) of the loop.
      maximum_iterations: an optional int bound on the number of iterations.
      return_same_structure: when False, one loop variable given in a one-element list or
        tuple is returned bare, as in TF1.
      unroll: (sluice) how many iterations the compiled engine puts in one step of its loop when
        the trip count is known to be `maximum_iterations` (a `lax.scan`); trades compile time
        for speed, never changes results.

    Returns:
      The final loop variables, structured like `loop_vars`.

    Raises:
      TypeError: cond/body not callable, a non-bool predicate, or a loop variable whose dtype
        changes.
      ValueError: body returns another structure, or a shape outside the shape invariant.

    >>> i = sl.constant(0)
    >>> r = sl.while_loop(lambda i: i < 10, lambda i: i + 1, [i])
    >>> print(sl.Session().run(r))
    10
    """
    if not callable(cond) or not callable(body):
        raise TypeError("sl.while_loop: cond and body must be callables.")
    if parallel_iterations < 1:
        raise ValueError("sl.while_loop: parallel_iterations must be a positive integer.")
    if int(unroll) < 1:
        raise ValueError("sl.while_loop: unroll must be a positive integer.")
    user_leaves = jax.tree_util.tree_leaves(loop_vars, is_leaf=_is_user_leaf)
    # IndexedSlices are loop variables as TF1's: values, indices and dense_shape, each a loop
    # variable of its own, put together again by the pytree.
    leaves, tree = jax.tree_util.tree_flatten(loop_vars, is_leaf=_is_var_leaf)
    if not leaves:
        raise ValueError("sl.while_loop: loop_vars must contain at least one tensor.")
    tensors = [core_ops.convert_to_tensor(x) for x in tensor_array.flows_of(leaves)]
    g = tensors[0].graph
    invariants = _flat_invariants(shape_invariants, user_leaves)

    counter_used = maximum_iterations is not None
    with g.name_scope(name or "while") as scope:
        if counter_used:
            maximum_iterations = core_ops.convert_to_tensor(maximum_iterations, dtype=dtypes.int32)
            if maximum_iterations.shape.rank not in (None, 0):
                raise ValueError(
                    f"sl.while_loop: maximum_iterations must be a scalar, got shape "
                    f"{maximum_iterations.shape}."
                )
            tensors = [core_ops.constant(0, name="iteration_counter")] + tensors
            invariants = [TensorShape([])] + invariants
        static_max = None
        if counter_used:
            value = constant_value(maximum_iterations)
            static_max = int(value) if value is not None else maximum_iterations
        ctx = WhileContext(
            g, scope[:-1], parallel_iterations, back_prop, swap_memory, static_max, int(unroll)
        )
        exits = _build_loop(
            ctx, cond, body, tree, leaves, tensors, invariants, counter_used, maximum_iterations
        )
        g.add_to_collection(GraphKeys.WHILE_CONTEXT, ctx)
    if counter_used:
        exits = exits[1:]
    result = jax.tree_util.tree_unflatten(tree, tensor_array.rebuild_like(leaves, exits))
    if (
        not return_same_structure
        and isinstance(result, (list, tuple))
        and len(exits) == 1
        and len(result) == 1
    ):
        return result[0]  # TF1: one loop variable, given as [x], (x,) or a 1-field namedtuple
    return result


def _build_loop(
    ctx: WhileContext,
    cond,
    body,
    tree,
    templates: list,
    tensors: list[Tensor],
    invariants: list,
    counter_used: bool,
    maximum_iterations: Any,
) -> list[Tensor]:
    g = ctx.graph
    outer = ctx.outer_context
    if outer is not None:
        tensors = [outer.capture(t) for t in tensors]
    enters = []
    for t, shape in zip(tensors, invariants):
        if shape is not None and not shape.is_compatible_with(t.shape):
            raise ValueError(
                f"The shape invariant {shape} given for loop variable {t.name} is not compatible "
                f"with its initial shape {t.shape}."
            )
        e = ctx.make_enter(t, is_constant=False)
        if shape is not None:
            e.set_static_shape(shape)
        enters.append(e)
    ctx.loop_enters = enters
    with ctx, g.control_dependencies(None):
        merges = [merge([e, e])[0] for e in enters]
        for m, e in zip(merges, enters):
            m.set_static_shape(e.shape)
    ctx.pivot_for_pred = merges[0]
    if counter_used:
        ctx.counter = merges[0]  # recorded: the compiler asks for it, never searches
    user_merges = merges[1:] if counter_used else merges
    with ctx:
        pred = core_ops.convert_to_tensor(
            cond(*_unpack(tree, tensor_array.rebuild_like(templates, user_merges)))
        )
        if pred.dtype != dtypes.bool_:
            raise TypeError(
                "sl.while_loop: cond must return a bool tensor,"
                f" got {pred.dtype.name} ({pred.name})."
            )
        if pred.shape.rank not in (None, 0):
            raise ValueError(f"sl.while_loop: cond must return a scalar, got shape {pred.shape}.")
        if counter_used:
            from sluice.framework.ops.math import math_ops

            within = math_ops.less(merges[0], maximum_iterations)
            pred = math_ops.logical_and(within, pred)
        with g.control_dependencies(None):
            loop_cond = core_ops.apply_op("LoopCond", [pred], name="LoopCond").outputs[0]
            switches = [switch(m, loop_cond) for m in merges]
            body_vars = [core_ops.identity(s[1]) for s in switches]
        ctx.loop_cond = loop_cond
        ctx.pivot_for_body = body_vars[0]
        user_body_vars = body_vars[1:] if counter_used else body_vars
        packed = _unpack(tree, tensor_array.rebuild_like(templates, user_body_vars))
        result = body(*packed)
        results = _flatten_body_result(result, tree, packed)
        tensor_array.require_same_kinds(templates, results, "sl.while_loop: body")
        results = tensor_array.flows_of(results)
        for i, r in enumerate(results):
            if isinstance(r, Tensor) and not may_use_in(r, ctx):
                # the error names the NextIteration that would take it, as TF1's does
                ahead = i + 1 + (1 if counter_used else 0)  # the counter's comes first
                names = [g.unique_name("NextIteration") for _ in range(ahead)]
                check_loop_input(r, ctx, names[-1])
        if counter_used:
            from sluice.framework.ops.math import math_ops

            results = [math_ops.add(body_vars[0], core_ops.constant(1))] + results
        with g.control_dependencies(None):
            results = [
                core_ops.identity(
                    r if isinstance(r, Tensor) else core_ops.convert_to_tensor(r, dtype=m.dtype)
                )
                for r, m in zip(results, merges)
            ]
        for i, (r, m, e) in enumerate(zip(results, merges, tensors)):
            _check_loop_var(i - (1 if counter_used else 0), r, m, e)
        with g.control_dependencies(None):
            for r, m in zip(results, merges):
                nxt = core_ops.apply_op("NextIteration", [r], name="NextIteration").outputs[0]
                m.op.update_input(1, nxt)
    with g.control_dependencies(None):
        ctx.enter()
        try:
            exits = [core_ops.apply_op("Exit", [s[0]], name="Exit").outputs[0] for s in switches]
        finally:
            ctx.exit()
    for x, shape in zip(exits, [m.shape for m in merges]):
        x.set_static_shape(shape)
    return exits


def _check_loop_var(index: int, result: Tensor, merge_out: Tensor, initial: Tensor) -> None:
    if result.dtype != merge_out.dtype:
        raise TypeError(
            f"sl.while_loop: loop variable {index} enters the loop as {merge_out.dtype.name} but "
            f"body returns {result.dtype.name}; the dtype may not change."
        )
    if not _shape_at_most(result.shape, merge_out.shape):
        raise ValueError(
            f"Input tensor '{initial.name}' enters the loop with shape {merge_out.shape}, but has "
            f"shape {result.shape} after one iteration. To allow the shape to vary across "
            "iterations, use the `shape_invariants` argument of tf.while_loop to specify a "
            "less-specific shape."  # TF1's words: sluice's `while_loop` is `tf.while_loop`
        )


def _shape_at_most(shape: TensorShape, invariant: TensorShape) -> bool:
    """True when every value of `shape` satisfies `invariant`."""
    if invariant.rank is None:
        return True
    if shape.rank != invariant.rank:
        return False
    return all(b is None or a == b for a, b in zip(shape.dims, invariant.dims))


def _flatten_body_result(result: Any, tree: Any, packed: list) -> list:
    """The leaves of the body's `result`, which must nest like the loop variables `packed` (the
    body's arguments); TF1's ValueError (nest.assert_same_structure's) when it does not."""
    expected = nesting.signature(jax.tree_util.tree_unflatten(tree, [0] * tree.num_leaves))
    if (
        expected[0] == "seq"
        and len(expected[1]) == 1
        and nesting.signature(result) == expected[1][0]
    ):
        result = [result]  # a body of one loop variable may return it bare, as in TF1
    leaves, _ = jax.tree_util.tree_flatten(result, is_leaf=_is_var_leaf)
    if len(leaves) != tree.num_leaves or nesting.signature(result) != expected:
        # TF1 compares list(loop_vars) with list(body result): the first level as lists
        got = list(result) if isinstance(result, (list, tuple)) else [result]
        raise nesting.structure_error(
            "sl.while_loop: body must return the same structure as loop_vars.",
            list(packed),
            got,
            nesting.mismatch(list(packed), got),
        )
    return leaves


def _unpack(tree: Any, flat: list[Tensor]) -> list:
    packed = jax.tree_util.tree_unflatten(tree, flat)
    if isinstance(packed, list) or (isinstance(packed, tuple) and not hasattr(packed, "_fields")):
        return list(packed)
    return [packed]


def _flat_invariants(shape_invariants: Any, user_leaves: list) -> list:
    """One shape (or None) per loop tensor. The shape given for an IndexedSlices is its values'
    (TF1): its indices then have shape [shape[0]] and its dense_shape [rank]."""
    if shape_invariants is None:
        shapes = [None] * len(user_leaves)
    else:
        shapes = jax.tree_util.tree_leaves(
            shape_invariants,
            is_leaf=lambda x: (
                isinstance(x, (TensorShape, TensorSpec, SparseTensorSpec)) or _is_shape_like(x)
            ),
        )
        if len(shapes) != len(user_leaves):
            raise ValueError(
                f"sl.while_loop: shape_invariants has {len(shapes)} shapes for "
                f"{len(user_leaves)} loop variables."
            )
    flat = []
    for var, shape in zip(user_leaves, shapes):
        if isinstance(shape, (TensorSpec, SparseTensorSpec)):
            flat += _spec_invariants(var, shape)
            continue
        shape = None if shape is None else as_shape(shape)
        if isinstance(var, SparseTensor):
            flat += _sparse_invariants(var, shape)
            continue
        if not isinstance(var, IndexedSlices):
            flat.append(shape)
            continue
        known = shape is not None and shape.rank is not None
        flat += [shape, TensorShape([shape.dims[0]]) if known else None]
        if var.dense_shape is not None:
            flat.append(TensorShape([shape.rank]) if known else None)
    return flat


def _spec_invariants(var: Any, spec: TensorSpec | SparseTensorSpec) -> list[TensorShape]:
    """The shapes a TensorSpec or SparseTensorSpec invariant gives the loop tensors of `var`.

    Raises:
      TypeError: the spec does not describe `var` (another kind, dtype or shape), as TF1.
    """
    if not isinstance(var, (SparseTensor, IndexedSlices)) and not tensor_array.is_tensor_array(var):
        var = core_ops.convert_to_tensor(var)
    if not spec.is_compatible_with(var):
        raise TypeError(
            f"sl.while_loop: TypeSpec {spec!r} is not compatible with loop variable {var!r}."
        )
    if isinstance(spec, SparseTensorSpec):
        return spec.component_shapes()
    return [spec.shape]


def _sparse_invariants(var: SparseTensor, shape: TensorShape | None) -> list[TensorShape]:
    """The shapes of a SparseTensor's indices, values and dense_shape in the loop (TF1): the
    number of elements may change between iterations; the rank may not, unless the invariant
    (the shape of its dense_shape, `[rank]` or `[None]`) lets it."""
    if shape is None:
        rank = var.indices.shape[1] if var.indices.shape.rank == 2 else None
    elif shape.rank not in (None, 1):
        raise ValueError(
            f"sl.while_loop: the shape invariant of SparseTensor {var.name} is the shape of its "
            f"dense_shape, [rank]; expected a shape with 1 dimension, got {shape}."
        )
    else:
        rank = None if shape.rank is None else shape.dims[0]
    return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]


def _is_shape_like(x: Any) -> bool:
    return isinstance(x, (list, tuple)) and all(d is None or isinstance(d, int) for d in x)


def _is_var_leaf(x: Any) -> bool:
    return (
        isinstance(x, Tensor)
        or hasattr(x, "_as_tensor")
        and not isinstance(x, IndexedSlices)
        or tensor_array.is_tensor_array(x)
    )


def _is_user_leaf(x: Any) -> bool:
    return _is_var_leaf(x) or isinstance(x, (IndexedSlices, SparseTensor))
