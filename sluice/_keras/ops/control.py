"""`keras.ops` control flow beyond `cond`/`while_loop`/`scan` (Keras's `ops/core.py`): `switch`,
`map`, `vectorized_map`, `associative_scan`, `custom_gradient`.

As in `core`, on values outside graph code each runs as the plain Python its docstring gives;
on symbolic tensors and inside graph code it builds graph ops (`sl.cond`, `sl.while_loop`,
slices), which gradients go through.

>>> sl.ops.switch(1, [lambda x: x + 1, lambda x: x * 10], 3)
30
>>> sl.ops.map(lambda row: sl.ops.sum(row), np.array([[1, 2], [3, 4]]))
Array([3, 7])
>>> sl.ops.associative_scan(lambda a, b: a + b, np.array([1.0, 2.0, 3.0, 4.0]))
Array([ 1.,  3.,  6., 10.])
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.array import as_array
from sluice._keras.ops.core import cond
from sluice._keras.ops.eager import in_graph_code, known_rank, tensor
from sluice._tf1.cells import nest
from sluice.framework.autodiff import custom_gradient as custom_gradient_lib
from sluice.framework.compiler import on_tracers
from sluice.framework.control_flow import while_loop as while_lib
from sluice.framework.control_flow.tensor_array import TensorArray
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.math import math_ops


@export("ops.switch")
def switch(index: Any, branches: list[Callable[..., Any]], *operands: Any) -> Any:
    """`branches[index](*operands)`, with `index` clamped to the branches (as `lax.switch`).

    Semantics (and the computation on values)::

        def switch(index, branches, *operands):
            index = min(max(int(index), 0), len(branches) - 1)
            return branches[index](*operands)

    Raises:
      ValueError: no branches.
    """
    if not branches:
        raise ValueError("switch: `branches` must hold at least one function.")
    last = len(branches) - 1
    if not in_graph_code(index, concrete_is_value=True):  # the branch is chosen here
        found = branches[min(max(int(np.asarray(index)), 0), last)](*operands)
        return found if in_graph_code((operands, found)) else _as_values(found)
    index = tensor(index, dtypes.int32)

    def pick(i: int) -> Any:  # branch i if index <= i, else the later ones
        if i == last:
            return branches[i](*operands)
        is_i = math_ops.less_equal(index, tensor(i, dtypes.int32))
        return cond(is_i, lambda: branches[i](*operands), lambda: pick(i + 1))

    return pick(0)


@export("ops.map")
def map(f: Callable[[Any], Any], xs: Any) -> Any:  # noqa: A001  (Keras's name)
    """`f` applied to each slice of `xs` along its leading axis, the results stacked. `xs` may
    be a nested structure of arrays of one length; `f` gets the structure of slices.

    Semantics (and the computation on values)::

        def map(f, xs):
            return stack([f(x) for x in xs])

    On graph tensors it builds a `while_loop` (`f`'s ops once for the first slice, to learn
    the output structure, as Keras's TensorFlow backend does, and once in the loop), so `xs`
    needs at least one slice.
    """
    if not in_graph_code(xs, concrete_is_value=True):
        flat = [np.asarray(x) for x in nest.flatten(xs)]
        ys = [f(nest.pack_sequence_as(xs, [a[i] for a in flat])) for i in range(len(flat[0]))]
        return _stack_values(ys)
    return _map_graph(f, xs)


@export("ops.vectorized_map")
def vectorized_map(function: Callable[[Any], Any], elements: Any) -> Any:
    """`function` applied to each slice of `elements` (a nested structure of arrays) along the
    leading axis, the results stacked: the values of `jax.vmap(function)(elements)`.

    Semantics::

        def vectorized_map(function, elements):
            return stack([function(x) for x in unstack(elements)])

    sluice computes it as `map` (one slice at a time; no batching rewrite of `function`).
    """
    return map(function, elements)


def _as_values(structure: Any) -> Any:
    """Arrays (NumPy's, JAX's, tensors with values) in `structure` as `sl.Array`s."""
    return nest.map_structure(
        lambda x: as_array(np.asarray(x)) if hasattr(x, "__array__") else x, structure
    )


def _stack_values(ys: list) -> Any:
    if not ys:
        raise ValueError("map: `xs` has no slices to map over.")
    parts = zip(*[nest.flatten(y) for y in ys])
    stacked = [as_array(np.stack([np.asarray(v) for v in values])) for values in parts]
    return nest.pack_sequence_as(ys[0], stacked)


def _map_graph(f: Callable, xs: Any) -> Any:
    flat_xs = [tensor(x) for x in nest.flatten(xs)]
    n = fill_ops.shape(flat_xs[0])[0]
    first = nest.flatten(f(nest.pack_sequence_as(xs, [x[0] for x in flat_xs])))
    first = [tensor(y) for y in first]
    inputs = [TensorArray(x.dtype, size=n, element_shape=x.shape[1:]).unstack(x) for x in flat_xs]
    outputs = [TensorArray(y.dtype, size=n, element_shape=y.shape).write(0, y) for y in first]
    structure = None

    def body(i: Any, ys: list) -> tuple:
        nonlocal structure
        found = f(nest.pack_sequence_as(xs, [a.read(i) for a in inputs]))
        structure = found
        return i + 1, [a.write(i, tensor(v)) for a, v in zip(ys, nest.flatten(found))]

    known = flat_xs[0].shape[0] if flat_xs[0].shape.rank else None
    _, ys = while_lib.while_loop(
        lambda i, _: math_ops.less(i, n),
        body,
        (tensor(1, dtypes.int32), outputs),
        maximum_iterations=known,  # a known bound lets the compiler size its stacks
        return_same_structure=True,
    )
    return nest.pack_sequence_as(structure, [a.stack() for a in ys])


@export("ops.associative_scan")
def associative_scan(
    f: Callable[[Any, Any], Any], elems: Any, reverse: bool = False, axis: int = 0
) -> Any:
    """The running combination by `f` along `axis` of `elems` (an array or a nested structure
    of arrays of one length there): entry i is `f(...f(f(e0, e1), e2)..., ei)`, or from the end
    with `reverse`. `f` must be associative and vectorized: it takes and gives structures of
    arrays (slices of `elems` along `axis`) and combines them entry by entry.

    Semantics (the values; the computation is the parallel prefix scan of `lax.associative_scan`,
    log2(n) rounds of `f` on halves, so the length along `axis` must be known)::

        def associative_scan(f, elems, reverse=False, axis=0):
            xs = unstack(elems, axis)[::-1] if reverse else unstack(elems, axis)
            out = [xs[0]]
            for x in xs[1:]:
                out.append(f(out[-1], x))
            return stack(out[::-1] if reverse else out, axis)

    Raises:
      ValueError: leaves of different lengths along `axis`, or a length that is not known.
    """
    graph = in_graph_code(elems)
    flat = [tensor(x) for x in nest.flatten(elems)] if graph else nest.flatten(elems)
    flat = [x if graph else np.asarray(x) for x in flat]
    rank = known_rank(flat[0], "associative_scan") if graph else flat[0].ndim
    axis %= rank
    lengths = {x.shape[axis] for x in flat}
    if len(lengths) != 1 or None in lengths:
        raise ValueError(
            "associative_scan: every array of `elems` needs the same known length along axis "
            f"{axis}; got shapes {[tuple(x.shape) for x in flat]}."
        )
    if not graph:  # on values: the same rounds, each `f` computing at once
        flat = [as_array(x) for x in flat]
    ops = _GraphSlices(axis) if graph else _ValueSlices(axis)

    def combine(a: list, b: list) -> list:
        found = f(nest.pack_sequence_as(elems, a), nest.pack_sequence_as(elems, b))
        return [tensor(v) if graph else as_array(np.asarray(v)) for v in nest.flatten(found)]

    if reverse:
        flat = [ops.flip(x) for x in flat]
    scanned = _prefix_scan(combine, flat, ops)
    if reverse:
        scanned = [ops.flip(x) for x in scanned]
    return nest.pack_sequence_as(elems, scanned)


def _prefix_scan(combine: Callable, elems: list, ops: Any) -> list:
    """The inclusive scan of `elems` (lists of arrays, one length n along the axis) by the
    odd/even recursion: scan the pairwise combinations, then fill in the even entries."""
    n = elems[0].shape[ops.axis]
    if n < 2:
        return elems
    pairs = combine([ops.cut(x, 0, n - 1, 2) for x in elems], [ops.cut(x, 1, n, 2) for x in elems])
    odd = _prefix_scan(combine, pairs, ops)  # entries 1, 3, 5, ...
    # entries 2, 4, ...: the scan up to the odd entry before, combined with the even entry
    head = [ops.cut(x, 0, len_ - 1 if n % 2 == 0 else len_, 1) for x, len_ in _lengths(odd, ops)]
    even = combine(head, [ops.cut(x, 2, n, 2) for x in elems]) if n > 2 else None
    firsts = [ops.cut(x, 0, 1, 1) for x in elems]
    even = firsts if even is None else [ops.join([a, b]) for a, b in zip(firsts, even)]
    return [ops.interleave(e, o, n) for e, o in zip(even, odd)]


def _lengths(xs: list, ops: Any) -> list:
    return [(x, x.shape[ops.axis]) for x in xs]


class _GraphSlices:
    """Slicing along one axis, as graph ops."""

    def __init__(self, axis: int):
        self.axis = axis

    def cut(self, x: Any, start: int, stop: int, step: int) -> Any:
        return x[(slice(None),) * self.axis + (slice(start, stop, step),)]

    def flip(self, x: Any) -> Any:
        return array_ops.reverse(x, [self.axis])

    def join(self, xs: list) -> Any:
        return join_ops.concat(xs, self.axis)

    def interleave(self, even: Any, odd: Any, n: int) -> Any:
        """even[0], odd[0], even[1], odd[1], ... (n entries) along the axis."""
        if odd.shape[self.axis] < even.shape[self.axis]:  # pad odd by one entry, cut it later
            odd = join_ops.concat([odd, self.cut(even, 0, 1, 1)], self.axis)
        pairs = join_ops.stack([even, odd], axis=self.axis + 1)
        shape = fill_ops.shape(even)
        merged = join_ops.concat([shape[: self.axis], [-1], shape[self.axis + 1 :]], 0)
        return self.cut(array_ops.reshape(pairs, merged), 0, n, 1)


class _ValueSlices(_GraphSlices):
    """Slicing along one axis, on NumPy values."""

    def flip(self, x: Any) -> Any:
        return np.flip(x, self.axis)

    def join(self, xs: list) -> Any:
        return as_array(np.concatenate([np.asarray(x) for x in xs], self.axis))

    def interleave(self, even: Any, odd: Any, n: int) -> Any:
        shape = list(even.shape)
        shape[self.axis] = n
        out = np.empty(shape, np.result_type(even, odd))
        out[(slice(None),) * self.axis + (slice(0, None, 2),)] = even
        out[(slice(None),) * self.axis + (slice(1, None, 2),)] = odd
        return as_array(out)


@export("ops.custom_gradient")
def custom_gradient(f: Callable) -> Callable:
    """Decorator giving `f` a gradient of its own, as Keras's `ops.custom_gradient`.

    `f(*args)` returns `(output, grad_fn)`; `grad_fn(upstream)` (or `grad_fn(*args,
    upstream=None)` called with the upstream gradients positionally, Keras's form for every
    backend) returns the gradients of `args`, one per argument. The decorated function returns
    `output`; on graph tensors its gradient (`sl.gradients`, `GradientTape`) is `grad_fn`'s,
    built as TF1's `custom_gradient`. On values it computes `output` at once.

    >>> @sl.ops.custom_gradient
    ... def log1pexp(x):
    ...     e = sl.ops.exp(x)
    ...     def grad(upstream):
    ...         return sl.ops.multiply(upstream, 1.0 - 1.0 / sl.ops.add(1, e))
    ...     return sl.ops.log(1 + e), grad
    >>> x = sl.constant(100.0)
    >>> float(sl.gradients(log1pexp(x), x)[0].numpy())  # exp(100) overflows: not NaN
    1.0

    Raises:
      NotImplementedError: called on JAX tracers (inside `jax.grad`), where the gradient would
        be JAX's own, not `grad_fn`'s.
    """
    graph_fn = custom_gradient_lib.custom_gradient(f)

    @functools.wraps(f)
    def decorated(*args: Any) -> Any:
        if in_graph_code(args):
            return graph_fn(*args)
        if on_tracers.has_tracers(args):
            raise NotImplementedError(
                f"ops.custom_gradient: {getattr(f, '__name__', f)!r} was called on JAX tracers; "
                "its grad_fn applies to graph gradients (sl.gradients, GradientTape) only."
            )
        return _as_values(f(*args)[0])

    return decorated
