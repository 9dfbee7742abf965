"""`map_fn`, `scan`, `foldl`, `foldr`: a function applied along axis 0, as TF1 builds them.

Each unstacks its `elems` into TensorArrays, runs one `while_loop` with
`maximum_iterations=n` that reads element i and (map_fn, scan) writes the result into another
TensorArray, and stacks the results. They are graphs of while loops, so both engines run them
and `gradients` differentiates them. Semantics, as plain Python over the first axis::

    map_fn(fn, elems)      = stack([fn(x) for x in elems])
    foldl(fn, elems, a)    : for x in elems: a = fn(a, x); return a
    foldr(fn, elems, a)    : for x in reversed(elems): a = fn(a, x); return a
    scan(fn, elems, a)     : out = []; for x in elems: a = fn(a, x); out.append(a)
                             return stack(out)   (reverse=True walks elems from the end)

Without an initializer, fold and scan start from the first element (the last for foldr and a
reverse scan). `elems` and the results may be nested structures (tuples, lists, dicts).
"""

from __future__ import annotations

from typing import Any, Callable

import jax

from sluice._export import export
from sluice.framework.control_flow.tensor_array import TensorArray
from sluice.framework.control_flow.while_loop import while_loop
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.graph import name_scope as _name_scope
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops


def _is_leaf(x: Any) -> bool:
    return not isinstance(x, (list, tuple, dict))


def _flatten(x: Any) -> tuple[list, Any]:
    return jax.tree_util.tree_flatten(x, is_leaf=_is_leaf)


def _require_same_structure(expected: Any, got: Any, what: str) -> list:
    """`got` flattened; ValueError (TypeError for other sequence types) unless it is nested as
    `expected` is, as TF1's nest.assert_same_structure."""
    want_leaves, want_tree = _flatten(expected)
    leaves, tree = _flatten(got)
    if tree != want_tree:
        error = TypeError if len(leaves) == len(want_leaves) else ValueError
        raise error(
            f"{what}: the two structures don't have the same nested structure: "
            f"expected {want_tree}, got {tree}."
        )
    if any(leaf is None for leaf in leaves):  # TF1: "None values not supported"
        raise ValueError(f"{what}: fn returned None where a Tensor was expected: {got!r}.")
    return leaves


def _elements(elems: Any, name: str) -> tuple[list[Tensor], Any, Any]:
    """The flat elems as tensors of rank >= 1, and n (a Python int when known)."""
    flat, tree = _flatten(elems)
    if not flat:
        raise ValueError(f"{name}: elems must hold at least one tensor.")
    flat = [core_ops.convert_to_tensor(e, name="elem") for e in flat]
    static = flat[0].shape
    if static.rank is not None and static.rank < 1:
        if len(flat) == 1:
            raise ValueError("elems must be a 1+ dimensional Tensor, not a scalar")
        raise ValueError("elements in elems must be 1+ dimensional Tensors, not scalars")
    n_static = static[0] if static.rank is not None else None
    for e in flat[1:]:
        first = e.shape[0] if e.shape.rank else None
        if n_static is not None and first is not None and first != n_static:
            raise ValueError(
                f"{name}: every tensor in elems must have the same first "
                f"dimension, got {n_static} and {first} ({e.name})."
            )
        n_static = n_static if n_static is not None else first
    n = n_static if n_static is not None else fill_ops.shape(flat[0])[0]
    return flat, tree, n


def _unstacked(flat: list[Tensor], n: Any) -> list[TensorArray]:
    return [
        TensorArray(e.dtype, size=n, dynamic_size=False, infer_shape=True).unstack(e) for e in flat
    ]


def _set_first_dim(results: list[Tensor], flat_elems: list[Tensor]) -> None:
    n_static = None
    for e in flat_elems:
        if e.shape.rank and e.shape[0] is not None:
            n_static = e.shape[0]
    for r in results:
        if r.shape.rank is not None:
            r.set_shape(TensorShape([n_static]).concatenate(r.shape[1:]))


@export("map_fn")
def map_fn(
    fn: Callable[[Any], Any],
    elems: Any,
    dtype: Any = None,
    parallel_iterations: int | None = None,
    back_prop: bool = True,
    swap_memory: bool = False,
    infer_shape: bool = True,
    name: str | None = None,
) -> Any:
    """`fn` applied to each element of `elems` along axis 0, the results stacked.

    Args:
      fn: called with one element (structured like `elems`); returns a structure like `dtype`
        (or like `elems` when `dtype` is None).
      elems: a tensor, or a nested structure of tensors with one first dimension n.
      dtype: the dtypes of `fn`'s results, as a structure, when they differ from `elems`.
      parallel_iterations, back_prop, swap_memory: as `while_loop` (parallel_iterations
        defaults to 10).
      infer_shape: check that every result has the same shape.
      name: name scope.

    Returns:
      The stacked results, [n, ...] each, in `fn`'s structure.

    Raises:
      TypeError: `fn` not callable, or `fn` returns another kind of structure.
      ValueError: scalar elems, or `fn` returns another structure.

    >>> print(sl.Session().run(sl.map_fn(lambda x: x * x, sl.constant([1.0, 2.0, 3.0]))))
    [1. 4. 9.]
    """
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with _name_scope(name, "map"):
        flat, in_tree, n = _elements(elems, "map_fn")
        if dtype is None:
            out_template = jax.tree_util.tree_unflatten(in_tree, [e.dtype for e in flat])
        else:
            out_template = dtype
        out_dtypes = [dtypes.as_dtype(d) for d in _flatten(out_template)[0]]
        elems_ta = _unstacked(flat, n)
        accs = [
            TensorArray(d, size=n, dynamic_size=False, infer_shape=infer_shape) for d in out_dtypes
        ]

        def compute(i, tas):
            packed = jax.tree_util.tree_unflatten(in_tree, [ta.read(i) for ta in elems_ta])
            values = _require_same_structure(out_template, fn(packed), "map_fn")
            values = [core_ops.convert_to_tensor(v, dtype=d) for v, d in zip(values, out_dtypes)]
            return i + 1, [ta.write(i, v) for ta, v in zip(tas, values)]

        _, results = while_loop(
            lambda i, _: math_ops.less(i, n),
            compute,
            (core_ops.constant(0), accs),
            parallel_iterations=parallel_iterations or 10,
            back_prop=back_prop,
            swap_memory=swap_memory,
            maximum_iterations=n,
        )
        stacked = [ta.stack() for ta in results]
        _set_first_dim(stacked, flat)
        return jax.tree_util.tree_unflatten(_flatten(out_template)[1], stacked)


def _fold(
    fn: Callable,
    elems: Any,
    initializer: Any,
    parallel_iterations: int,
    back_prop: bool,
    swap_memory: bool,
    name: str | None,
    reverse: bool,
    what: str,
) -> Any:
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with _name_scope(name, what):
        flat, in_tree, n = _elements(elems, what)
        elems_ta = _unstacked(flat, n)
        last = math_ops.subtract(n, 1) if reverse else None
        if initializer is None:
            start = last if reverse else 0
            a = jax.tree_util.tree_unflatten(in_tree, [ta.read(start) for ta in elems_ta])
            i = math_ops.subtract(n, 2) if reverse else core_ops.constant(1)
        else:
            a = initializer
            i = last if reverse else core_ops.constant(0)

        def compute(i, a):
            packed = jax.tree_util.tree_unflatten(in_tree, [ta.read(i) for ta in elems_ta])
            a = fn(a, packed)
            return (math_ops.subtract(i, 1) if reverse else math_ops.add(i, 1)), a

        def more(i, _):
            return math_ops.greater_equal(i, 0) if reverse else math_ops.less(i, n)

        _, result = while_loop(
            more,
            compute,
            (i, a),
            parallel_iterations=parallel_iterations,
            back_prop=back_prop,
            swap_memory=swap_memory,
            maximum_iterations=n,
        )
        return result


@export("foldl")
def foldl(
    fn: Callable[[Any, Any], Any],
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
) -> Any:
    """`fn(...fn(fn(initializer, elems[0]), elems[1])..., elems[n-1])`; without an
    initializer, starts from elems[0] (an empty elems is then an InvalidArgumentError).

    >>> print(sl.Session().run(sl.foldl(lambda a, x: a + x, sl.constant([1, 2, 3]))))
    6
    """
    return _fold(
        fn,
        elems,
        initializer,
        parallel_iterations,
        back_prop,
        swap_memory,
        name,
        reverse=False,
        what="foldl",
    )


@export("foldr")
def foldr(
    fn: Callable[[Any, Any], Any],
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
) -> Any:
    """`foldl` from the last element to the first.

    >>> print(sl.Session().run(sl.foldr(lambda a, x: a * 10 + x, sl.constant([1, 2, 3]))))
    321
    """
    return _fold(
        fn,
        elems,
        initializer,
        parallel_iterations,
        back_prop,
        swap_memory,
        name,
        reverse=True,
        what="foldr",
    )


@export("scan")
def scan(
    fn: Callable[[Any, Any], Any],
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    infer_shape: bool = True,
    reverse: bool = False,
    name: str | None = None,
) -> Any:
    """The successive values of the accumulator `a = fn(a, x)` over `elems`, stacked.

    Args:
      fn: `fn(accumulator, element)` -> the new accumulator (structured like `initializer`, or
        like `elems` without one).
      elems: a tensor or nested structure of tensors with one first dimension n.
      initializer: the first accumulator; without it, elems[0] (elems[n-1] for reverse) is the
        first result.
      reverse: walk elems from the last element; result i is still the accumulator after
        element i.

    Returns:
      The accumulators, [n, ...] each, structured like the accumulator.

    >>> print(sl.Session().run(sl.scan(lambda a, x: a + x, sl.constant([1, 2, 3]))))
    [1 3 6]
    """
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with _name_scope(name, "scan"):
        flat, in_tree, n = _elements(elems, "scan")
        elems_ta = _unstacked(flat, n)
        last = math_ops.subtract(n, 1) if reverse else None
        if initializer is None:
            template = jax.tree_util.tree_unflatten(in_tree, list(flat))
            first = last if reverse else 0
            a_flat = [ta.read(first) for ta in elems_ta]
            i = 1
        else:
            template = initializer
            a_flat = [core_ops.convert_to_tensor(x) for x in _flatten(initializer)[0]]
            i = 0
        a_tree = _flatten(template)[1]
        accs = [
            TensorArray(
                a.dtype,
                size=n,
                dynamic_size=False,
                infer_shape=infer_shape,
                element_shape=a.shape if infer_shape else None,
            )
            for a in a_flat
        ]
        if initializer is None:
            accs = [ta.write(first, a) for ta, a in zip(accs, a_flat)]

        def compute(i, a_flat, tas):
            packed_elems = jax.tree_util.tree_unflatten(in_tree, [ta.read(i) for ta in elems_ta])
            packed_a = jax.tree_util.tree_unflatten(a_tree, a_flat)
            out = _require_same_structure(template, fn(packed_a, packed_elems), "scan")
            out = [core_ops.convert_to_tensor(v, dtype=a.dtype) for v, a in zip(out, a_flat)]
            tas = [ta.write(i, v) for ta, v in zip(tas, out)]
            return (math_ops.subtract(i, 1) if reverse else math_ops.add(i, 1)), out, tas

        if reverse:
            start = math_ops.subtract(last, i)

            def more(i, *_):
                return math_ops.greater_equal(i, 0)
        else:
            start = core_ops.constant(i)

            def more(i, *_):
                return math_ops.less(i, n)

        _, _, results = while_loop(
            more,
            compute,
            (start, a_flat, accs),
            parallel_iterations=parallel_iterations,
            back_prop=back_prop,
            swap_memory=swap_memory,
            maximum_iterations=n,
            return_same_structure=True,
        )
        stacked = [ta.stack() for ta in results]
        _set_first_dim(stacked, flat)
        return jax.tree_util.tree_unflatten(a_tree, stacked)
