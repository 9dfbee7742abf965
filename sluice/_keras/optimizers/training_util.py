"""The global step (TF1 `tf.train.get_or_create_global_step` and friends) and gradient clipping."""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Graph, GraphKeys, Tensor
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops
from sluice.framework.ops.math.indexed_slices import IndexedSlices
from sluice.framework.variables import Variable


@export("train.get_global_step")
def get_global_step(graph: Graph | None = None) -> Variable | None:
    """The graph's global step Variable (the GLOBAL_STEP collection), or None.

    Raises:
      TypeError: the collection holds more than one variable, or a non-integer one.
    """
    g = graph or graph_lib.get_default_graph()
    found = g.get_collection(GraphKeys.GLOBAL_STEP)
    if not found:
        return None
    if len(found) > 1:
        raise TypeError(f"There are {len(found)} global step variables: {[v.name for v in found]}.")
    step = found[0]
    if not dtypes.is_integer(step.dtype):
        raise TypeError(f"The global step {step.name} must be an integer, got {step.dtype.name}.")
    return step


@export("train.create_global_step")
def create_global_step(graph: Graph | None = None) -> Variable:
    """Creates the int64 scalar `global_step` Variable (not trainable), starting at 0.

    Raises:
      ValueError: the graph already has one.
    """
    g = graph or graph_lib.get_default_graph()
    if get_global_step(g) is not None:
        raise ValueError("The graph already has a global step.")
    with g.as_default(), g.name_scope(None):
        return Variable(
            np.zeros([], np.int64),
            trainable=False,
            name="global_step",
            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP],
        )


@export("train.get_or_create_global_step")
def get_or_create_global_step(graph: Graph | None = None) -> Variable:
    """The graph's global step, created on first use.

    >>> w = sl.Variable(1.0)
    >>> opt = sl.train.GradientDescentOptimizer(0.1)
    >>> step = sl.train.get_or_create_global_step()
    >>> train_op = opt.minimize(sl.square(w), global_step=step)   # each run adds 1
    >>> with sl.Session() as sess:
    ...     sess.run(sl.global_variables_initializer())
    ...     for _ in range(3):
    ...         sess.run(train_op)
    ...     print(sess.run(step))
    3
    """
    g = graph or graph_lib.get_default_graph()
    step = get_global_step(g)
    return step if step is not None else create_global_step(g)


@export("train.global_step")
def global_step(sess: Any, global_step_tensor: Any) -> int:
    """The current value of the global step, as a Python int."""
    return int(sess.run(global_step_tensor))


@export("global_norm", "train.global_norm")
def global_norm(t_list: list[Any], name: str | None = None) -> Tensor:
    """sqrt(sum of squares of every element of every tensor in t_list); None entries are skipped.
    Of an IndexedSlices, its values count (as TF1: repeated indices are not summed first)."""
    tensors = [core_ops.convert_to_tensor(_values_of(t)) for t in t_list if t is not None]
    if not tensors:
        raise ValueError("global_norm needs at least one tensor.")
    g = graph_lib.graph_of(tensors)
    with g.name_scope(name or "global_norm"):
        squares = [reduction_ops.reduce_sum(unary_ops.square(t)) for t in tensors]
        return unary_ops.sqrt(math_ops.add_n(squares) if len(squares) > 1 else squares[0])


@export("clip_by_global_norm", "train.clip_by_global_norm")
def clip_by_global_norm(
    t_list: list[Any], clip_norm: Any, use_norm: Any = None, name: str | None = None
) -> tuple[list[Tensor | None], Tensor]:
    """TF1 `tf.clip_by_global_norm`: t * clip_norm / max(global_norm, clip_norm) for each t.

    Returns:
      (the clipped tensors, None where the input was None, IndexedSlices with clipped values where
      it was IndexedSlices; the global norm before clipping).

    Optimizers also take `global_clipnorm=`, which clips inside the update (optax's
    `clip_by_global_norm`) without these extra graph ops.
    """
    norm = global_norm(t_list) if use_norm is None else core_ops.convert_to_tensor(use_norm)
    g = graph_lib.graph_of([norm])
    with g.name_scope(name or "clip_by_global_norm"):
        clip = core_ops.convert_to_tensor(clip_norm, dtype=norm.dtype)
        one = core_ops.constant(1.0, dtype=norm.dtype)
        scale = math_ops.multiply(
            clip, math_ops.minimum(math_ops.divide(one, norm), math_ops.divide(one, clip))
        )
        clipped = []
        for t in t_list:
            if t is None:
                clipped.append(None)
                continue
            values = core_ops.convert_to_tensor(_values_of(t))
            factor = scale if values.dtype == norm.dtype else fill_ops.cast(scale, values.dtype)
            values = math_ops.multiply(values, factor)
            if isinstance(t, IndexedSlices):
                values = IndexedSlices(values, t.indices, t.dense_shape)
            clipped.append(values)
    return clipped, norm


def _values_of(t: Any) -> Any:
    return t.values if isinstance(t, IndexedSlices) else t
