"""`keras.ops` core and math functions (Keras's `ops/core.py` and `ops/math.py`): shapes and
dtypes, conversion, control flow, segment reductions.

Control flow follows Keras: on values outside graph code `cond`, `while_loop`, `fori_loop` and
`scan` run as the plain Python loops their docstrings give (each step's `sl.ops` calls compute
at once); on symbolic tensors and inside graph code they build `sl.cond` / `sl.while_loop`
graphs, which gradients go through.

>>> sl.ops.fori_loop(0, 4, lambda i, total: total + i, 0)
6
>>> carry, ys = sl.ops.scan(lambda c, x: (c + x, c + x), 0.0, np.array([1.0, 2.0, 3.0]))
>>> float(carry), ys
(6.0, Array([1., 3., 6.]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from sluice._export import export
from sluice._keras.array import Array, as_array
from sluice._keras.layers import runtime
from sluice._keras.ops.eager import (
    in_graph_code,
    keras_op,
    standard_dtype,
    tensor,
)
from sluice._tf1.cells import nest
from sluice.framework.control_flow import cond as cond_lib
from sluice.framework.control_flow import while_loop as while_lib
from sluice.framework.control_flow.tensor_array import TensorArray
from sluice.framework.ir import concrete, dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, segment_ops
from sluice.framework.variables import Variable


# -- shapes, dtypes, conversion -------------------------------------------------------------------
@export("ops.shape")
def shape(x: Any) -> tuple:
    """x's shape as a tuple: ints where known, scalar int32 tensors for the dimensions only a
    run knows (symbolic x)."""
    if isinstance(x, Variable) and x.shape.is_fully_defined():  # no read op needed
        return tuple(x.shape.as_list())
    if not isinstance(x, (Tensor, Variable)) and not hasattr(x, "_as_tensor"):
        return tuple(int(d) for d in np.shape(x))
    t = core_ops.convert_to_tensor(x)
    if t.shape.rank is None:
        raise ValueError(f"shape: {t.name} has an unknown rank.")
    dynamic = None
    dims = []
    for i, d in enumerate(t.shape.dims):
        if d is None:
            dynamic = fill_ops.shape(t) if dynamic is None else dynamic
            d = dynamic[i]
        dims.append(d)
    return tuple(dims)


@export("ops.dtype")
def dtype(x: Any) -> str:
    """x's dtype, by name ("float32")."""
    return dtypes.as_dtype(getattr(x, "dtype", None) or np.asarray(x).dtype).name


@keras_op("cast")
def cast(x: Any, dtype: Any) -> Any:
    """x as `dtype`."""
    return fill_ops.cast(tensor(x), standard_dtype(dtype))


@export("ops.is_tensor")
def is_tensor(x: Any) -> bool:
    """Whether x is a tensor of this backend: a graph Tensor or an `sl.Array` (NumPy and JAX
    arrays are not)."""
    return isinstance(x, (Tensor, Array))


@export("ops.convert_to_numpy")
def convert_to_numpy(x: Any) -> np.ndarray:
    """x as a plain NumPy array: an array as is, a Variable (a layer's weight or state) as its
    current value, a tensor with a value (`framework.ir.concrete`) as that value. Any other
    symbolic tensor has no value: call the model instead.

    Raises:
      ValueError: a symbolic tensor whose value depends on a run.
    """
    if isinstance(x, Variable):
        return np.asarray(runtime.read_values(x.graph, [x])[0])
    if isinstance(x, Tensor):
        if not concrete.is_concrete(x):
            raise ValueError(
                f"convert_to_numpy got the symbolic tensor {x.name} ({x.dtype.name}{x.shape}), "
                "which has no value; call the model or layer on arrays to compute it."
            )
        return x.numpy() if x.shape.rank else np.asarray(x.numpy())
    if isinstance(x, Array):
        return np.array(x.numpy())
    return np.asarray(x)


@keras_op("stop_gradient")
def stop_gradient(variable: Any) -> Any:
    """`variable` with no gradient flowing back through it."""
    return core_ops.stop_gradient(tensor(variable))


# -- control flow ---------------------------------------------------------------------------------
def _true(pred: Any) -> bool:
    return bool(np.asarray(pred))


def _as_values(structure: Any) -> Any:
    return nest.map_structure(
        lambda x: as_array(np.asarray(x)) if isinstance(x, (Tensor, jax.Array)) else x, structure
    )


@export("ops.cond")
def cond(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
    """`true_fn()` if `pred` else `false_fn()`.

    Semantics (and the computation on values)::

        def cond(pred, true_fn, false_fn):
            return true_fn() if pred else false_fn()
    """
    if in_graph_code(pred, concrete_is_value=True):
        return cond_lib.cond(tensor(pred, dtypes.bool_), true_fn, false_fn)
    return _as_values(true_fn() if _true(pred) else false_fn())


@export("ops.while_loop")
def while_loop(
    cond: Callable[..., Any],
    body: Callable[..., Any],
    loop_vars: Any,
    maximum_iterations: int | None = None,
) -> Any:
    """Repeats `body` while `cond` holds, at most `maximum_iterations` times.

    Semantics (and the computation on values); a single loop variable may be given bare::

        def while_loop(cond, body, loop_vars, maximum_iterations=None):
            i = 0
            while cond(*loop_vars) and (maximum_iterations is None or i < maximum_iterations):
                loop_vars = body(*loop_vars)
                i += 1
            return loop_vars
    """
    is_tuple = isinstance(loop_vars, (tuple, list))
    variables = tuple(loop_vars) if is_tuple else (loop_vars,)

    def step(*vs: Any) -> tuple:
        out = body(*vs)
        return tuple(out) if is_tuple else (out,)

    if in_graph_code(variables, concrete_is_value=True):
        found = while_lib.while_loop(
            cond,
            step,
            variables,
            maximum_iterations=maximum_iterations,
            return_same_structure=True,
        )
    else:
        found, i = variables, 0
        while _true(cond(*found)) and (maximum_iterations is None or i < maximum_iterations):
            found, i = step(*found), i + 1
        found = _as_values(found)
    return type(loop_vars)(found) if is_tuple else found[0]


@export("ops.fori_loop")
def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any) -> Any:
    """`body_fun(i, val)` for i from `lower` up to `upper` (excluded), starting from `init_val`.

    Semantics (and the computation on values)::

        def fori_loop(lower, upper, body_fun, init_val):
            val = init_val
            for i in range(lower, upper):
                val = body_fun(i, val)
            return val
    """
    if not in_graph_code((lower, upper, init_val), concrete_is_value=True):
        val = init_val
        for i in range(int(np.asarray(lower)), int(np.asarray(upper))):
            val = body_fun(i, val)
        return _as_values(val)
    _, val = while_loop(
        lambda i, _: math_ops.less(i, tensor(upper, dtypes.int32)),
        lambda i, val: (i + 1, body_fun(i, val)),
        (tensor(lower, dtypes.int32), init_val),
    )
    return val


@export("ops.scan")
def scan(
    f: Callable[[Any, Any], Any],
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
    unroll: int = 1,
) -> tuple[Any, Any]:
    """Scans `f` over the leading axis of `xs`, carrying a state: returns (final carry, the
    stacked outputs). As Keras's TensorFlow backend, each output must have the carry's
    structure, dtypes and shapes.

    Semantics (and the computation on values)::

        def scan(f, init, xs=None, length=None, reverse=False):
            xs = [None] * length if xs is None else xs
            carry, ys = init, []
            for x in (reversed(xs) if reverse else xs):
                carry, y = f(carry, x)
                ys.append(y)
            return carry, stack(ys[::-1] if reverse else ys)

    Raises:
      ValueError: neither `xs` nor `length`.
    """
    if xs is None and length is None:
        raise ValueError("scan: got no `xs` to scan over and no `length`.")
    if not in_graph_code((init, xs), concrete_is_value=True):
        return _scan_values(f, init, xs, length, reverse)
    return _scan_graph(f, init, xs, length, reverse, unroll)


def _scan_values(f: Callable, init: Any, xs: Any, length: int | None, reverse: bool) -> tuple:
    flat_xs = [np.asarray(x) for x in nest.flatten(xs)] if xs is not None else []
    n = int(length) if length is not None else flat_xs[0].shape[0]
    order = range(n - 1, -1, -1) if reverse else range(n)
    carry, ys = init, [None] * n
    for i in order:
        x = nest.pack_sequence_as(xs, [a[i] for a in flat_xs]) if xs is not None else None
        carry, ys[i] = f(carry, x)
    if n == 0 or ys[0] is None:
        return _as_values(carry), None
    stacked = [
        as_array(np.stack([np.asarray(a) for a in parts])) for parts in zip(*map(nest.flatten, ys))
    ]
    return _as_values(carry), nest.pack_sequence_as(ys[0], stacked)


def _scan_graph(
    f: Callable, init: Any, xs: Any, length: int | None, reverse: bool, unroll: int
) -> tuple:
    flat_xs = [tensor(x) for x in nest.flatten(xs)] if xs is not None else []
    n = tensor(length, dtypes.int32) if length is not None else fill_ops.shape(flat_xs[0])[0]
    inputs = [TensorArray(x.dtype, size=n, element_shape=x.shape[1:]).unstack(x) for x in flat_xs]
    flat_init = [tensor(c) for c in nest.flatten(init)]
    outputs = [TensorArray(c.dtype, size=n, element_shape=c.shape) for c in flat_init]

    def body(i: Any, carry: list, ys: list) -> tuple:
        x = nest.pack_sequence_as(xs, [a.read(i) for a in inputs]) if xs is not None else None
        new_carry, y = f(nest.pack_sequence_as(init, carry), x)
        ys = [a.write(i, v) for a, v in zip(ys, nest.flatten(y))]
        step = -1 if reverse else 1
        return i + step, [tensor(c) for c in nest.flatten(new_carry)], ys

    start = n - 1 if reverse else tensor(0, dtypes.int32)
    _, carry, ys = while_lib.while_loop(
        lambda i, *_: math_ops.greater_equal(i, 0) if reverse else math_ops.less(i, n),
        body,
        (start, flat_init, outputs),
        parallel_iterations=max(int(unroll), 1),
        return_same_structure=True,
    )
    return nest.pack_sequence_as(init, carry), nest.pack_sequence_as(init, [a.stack() for a in ys])


# -- segment reductions ---------------------------------------------------------------------------
def _segments(graph_fn: Any, path: str, what: str) -> Any:
    def fn(data: Any, segment_ids: Any, num_segments: Any = None, sorted: bool = False) -> Any:  # noqa: A002
        data, ids = tensor(data), tensor(segment_ids)
        if ids.dtype.kind not in "iu":
            ids = fill_ops.cast(ids, dtypes.int32)
        if num_segments is None:  # as many as the largest id says (known now if it can be)
            largest = reduction_ops.reduce_max(ids)
            known = concrete.is_concrete(largest)
            num_segments = int(largest) + 1 if known else largest + tensor(1, ids.dtype)
        return graph_fn(data, ids, num_segments)

    fn.__name__ = path
    fn.__doc__ = (
        f"The {what} of the rows of `data` with the same id in `segment_ids`, one row per id "
        "up to `num_segments` (default: the largest id + 1); `sorted` is a hint."
    )
    return keras_op(path)(fn)


segment_sum = _segments(segment_ops.unsorted_segment_sum, "segment_sum", "sum")
segment_max = _segments(segment_ops.unsorted_segment_max, "segment_max", "maximum")
