"""Shapes and grids of several tensors: LinSpace (`lin_space`, `linspace`: evenly spaced
values), and the compositions `meshgrid` (coordinate grids, composed as TF1: reshapes times ones,
so gradients flow), `shape_n` (the shapes of several tensors) and `parallel_stack`.

>>> sl.Session().run(sl.lin_space(0.0, 1.0, 5)).tolist()
[0.0, 0.25, 0.5, 0.75, 1.0]
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import (
    INDEX_DTYPES,
    host_ints,
    register_array_op,
    scalar_int_value,
)
from sluice.framework.ops.core.shape_rules import require_rank


# -- LinSpace -------------------------------------------------------------------------------------
def _lin_space_infer(op) -> list:
    start, stop, num = op.inputs
    if not dtypes.is_floating(start.dtype) or start.dtype != stop.dtype:
        raise TypeError(
            f"start and stop must be floating scalars of one dtype, got "
            f"{start.dtype.name} and {stop.dtype.name}"
        )
    if num.dtype not in INDEX_DTYPES:
        raise TypeError(f"num must be an int32 or int64 scalar, got {num.dtype.name}")
    for t, what in ((start, "start"), (stop, "stop"), (num, "num")):
        require_rank(t, 0, what)
    n = scalar_int_value(num)
    if n is not None and n < 1:
        raise ValueError(f"num must be positive, got {n}")
    return [(start.dtype, TensorShape([n]))]


def _lin_space_kernel(start, stop, num, **_):
    (n,) = host_ints(num, "LinSpace's num")
    if n < 1:
        raise ValueError(f"LinSpace: num must be positive, got {n}")
    return jnp.linspace(start, stop, n, dtype=start.dtype)


register_array_op("LinSpace", infer=_lin_space_infer, kernel=_lin_space_kernel, host_inputs=(2,))
not_differentiable("LinSpace")  # as in TF1


@export("lin_space", "linspace")
def lin_space(start: Any, stop: Any, num: Any, name: str | None = None) -> Tensor:
    """`num` evenly spaced values from `start` to `stop`, both included (TF1 `tf.lin_space`);
    `num = 1` gives `[start]`.

    Args:
      start, stop: floating scalars of one dtype.
      num: a positive int32/int64 scalar, known when the graph runs.
      name: the op's name.
    """
    start = core_ops.convert_to_tensor(start)  # an int start is refused, as by TF1
    stop = (
        stop
        if isinstance(stop, Tensor)
        else core_ops.convert_to_tensor(stop, preferred_dtype=start.dtype)
    )
    num = core_ops.convert_to_tensor(num, preferred_dtype=dtypes.int32)
    return core_ops.apply_op("LinSpace", [start, stop, num], name=name).outputs[0]


linspace = lin_space


# -- compositions ---------------------------------------------------------------------------------
@export("meshgrid")
def meshgrid(*args: Any, indexing: str = "xy", name: str = "meshgrid") -> list:
    """Coordinate grids from N vectors (TF1 `tf.meshgrid`, NumPy's `meshgrid`): N tensors of
    shape `[len(args[1]), len(args[0]), ...]` ("xy", Cartesian) or `[len(args[0]), ...]` ("ij",
    matrix indexing).

    Raises:
      ValueError: `indexing` is neither "xy" nor "ij".
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing parameter must be either 'xy' or 'ij', got {indexing!r}")
    with graph_lib.name_scope(name, "meshgrid", list(args)):
        args = [core_ops.convert_to_tensor(x) for x in args]
        ndim = len(args)
        ones = [1] * ndim
        grids = [array_ops.reshape(x, ones[:i] + [-1] + ones[i + 1 :]) for i, x in enumerate(args)]
        sizes = [fill_ops.size(x) for x in args]
        if indexing == "xy" and ndim > 1:  # the first two axes swap places
            grids[0] = array_ops.reshape(grids[0], [1, -1] + ones[2:])
            grids[1] = array_ops.reshape(grids[1], [-1, 1] + ones[2:])
            sizes[0], sizes[1] = sizes[1], sizes[0]
        if not args:
            return []
        fill = fill_ops.ones(join_ops.stack(sizes), args[0].dtype)
        return [g * fill for g in grids]


@export("shape_n")
def shape_n(input: Any, out_type: Any = dtypes.int32, name: str | None = None) -> list:
    """The shape of each tensor of `input` (TF1 `tf.shape_n`), as `out_type` vectors."""
    with graph_lib.name_scope(name, "ShapeN", list(input)):
        return [fill_ops.shape(x, out_type=out_type) for x in input]


@export("parallel_stack")
def parallel_stack(values: Any, name: str = "parallel_stack") -> Tensor:
    """`stack(values)` along a new first axis (TF1 `tf.parallel_stack`), which, as TF1, needs
    the shape of the values to be fully known when the graph is built.

    Raises:
      ValueError: the first value's shape is not fully defined.
    """
    values = [core_ops.convert_to_tensor(v) for v in values]
    if values and not values[0].shape.is_fully_defined():
        raise ValueError(
            f"parallel_stack needs values of fully defined shape, got {values[0].shape}"
        )
    return join_ops.stack(values, axis=0, name=name)
