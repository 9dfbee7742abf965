"""How an `sl.ops` function runs, and Keras's dtype rules for its arguments.

Every function is written once, as graph code (TF1 ops on tensors). `keras_op` decides where
that code runs:

* on graph tensors (an `sl.Input`, a graph Variable, another op's output, a TF1 function's
  result), or anywhere inside graph code (a layer's `call`, a model's forward pass, a traced
  step), it adds ops to the current graph and returns tensors;
* on values outside graph code (NumPy or JAX arrays, `sl.Array`s, Python numbers, and Keras
  layers' weights and states, which stand for their values there) it builds the ops in a
  scratch graph whose inputs are constants and returns their values at once
  (`framework.ir.concrete`), as `sl.Array`s; the scratch graph is dropped;
* on JAX tracers (inside `jax.jit`, `jax.grad`, ...: Keras's JAX training loop) it builds the
  ops on placeholders and runs them as JAX operations on the tracers
  (`framework.compiler.on_tracers`), giving tracers.

A graph tensor made from constants only (`sl.expand_dims(array, 0)`) gives a graph tensor that
has a value too (`.numpy()`), so TF1 programs that mix `sl.ops` in keep their graphs.

Dtypes follow Keras 3 (JAX's promotion lattice): arrays promote as `jnp.promote_types`; Python
numbers are weak (they take the array's dtype when it can hold them; `1.5` with an int array
gives `floatx()`); numbers alone give int32, `floatx()` or bool.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice._keras import config
from sluice._keras.array import as_array
from sluice._keras.layers import runtime, tracking
from sluice._tf1.cells import nest
from sluice.framework import state_cells
from sluice.framework.compiler import on_tracers
from sluice.framework.ir import concrete, dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.variables import Variable


def keras_op(*paths: str) -> Callable[[Callable], Callable]:
    """Decorator: exports the graph function as `sl.ops.<path>` for each path, running it at
    once on values outside graph code (see the module docstring)."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Any:
            if in_graph_code((args, kwargs)):
                return fn(*args, **kwargs)
            if on_tracers.has_tracers((args, kwargs)):  # inside jax.jit, jax.grad, ...
                args, kwargs = nest.map_structure(_weight_value, (args, kwargs))
                return on_tracers.call_on_tracers(fn, args, kwargs)
            return evaluate(fn, args, kwargs)

        op.__name__ = op.__qualname__ = paths[0].rpartition(".")[2]  # its public name
        export(*[f"ops.{p}" for p in paths])(op)
        return op

    return wrap


def in_graph_code(arguments: Any, concrete_is_value: bool = False) -> bool:
    """Whether a call with `arguments` builds graph ops: graph code is being built, or an
    argument is symbolic (a graph Tensor, a TF1 Variable; a Keras layer's weight stands for its
    value outside graph code). With `concrete_is_value`, a tensor made from constants only
    (`sl.expand_dims(array, 0)`) counts as its value too (control flow runs in Python then)."""
    if tracking.tracing():
        return True
    return any(_is_symbolic(x, concrete_is_value) for x in nest.flatten(arguments))


def _is_symbolic(x: Any, concrete_is_value: bool) -> bool:
    if is_keras_variable(x):
        return False
    if isinstance(x, Tensor):
        return not (concrete_is_value and concrete.is_concrete(x))
    return isinstance(x, Variable) or hasattr(x, "_as_tensor")


def evaluate(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """`fn(*args, **kwargs)` built in a scratch graph on the values given; the results' values,
    tensors as `sl.Array`s (other results, such as Python ints, as they are)."""
    args, kwargs = nest.map_structure(_value_of, (args, kwargs))
    with graph_lib.Graph().as_default():
        result = fn(*args, **kwargs)
        return nest.map_structure(_result, result)


def is_keras_variable(x: Any) -> bool:
    """Whether x stands for its value here: a Keras layer's weight or state (a Variable with a
    state cell that Keras manages), unless a graph that uses it is being built (`with
    g.as_default()` of its graph, or of one holding its mirror), as `Variable.value` decides.
    TF1's Variables, whose values belong to sessions, never do."""
    if not isinstance(x, Variable):
        return False
    cell = state_cells.cell_of(x)
    if cell is None:
        return False
    entered = graph_lib.entered_default_graph()
    if entered is not None and (entered is x.graph or cell.mirror_in(entered) is not None):
        return False
    return state_cells.host_access(x) is not None


def _weight_value(x: Any) -> Any:
    """A Keras weight's current value, anything else as it is."""
    return np.asarray(runtime.read_values(x.graph, [x])[0]) if is_keras_variable(x) else x


def _value_of(x: Any) -> Any:
    if is_keras_variable(x):
        return np.asarray(runtime.read_values(x.graph, [x])[0])
    if isinstance(x, Tensor):
        return np.asarray(concrete.concrete_value(x))
    if isinstance(x, jax.Array):
        return np.asarray(x)
    return x


def _result(x: Any) -> Any:
    return as_array(concrete.concrete_value(x)) if isinstance(x, Tensor) else x


# -- dtypes ---------------------------------------------------------------------------------------
_WEAK = (bool, int, float)


def dtype_of(x: Any) -> np.dtype | type:
    """`x`'s dtype; a Python bool, int or float gives its type (a weak dtype)."""
    if isinstance(x, _WEAK) and not isinstance(x, np.generic):
        return type(x)
    if hasattr(x, "dtype"):
        return dtypes.as_dtype(x.dtype)
    return dtypes.as_dtype(np.asarray(x).dtype)


def result_dtype(*xs: Any) -> np.dtype:
    """The dtype Keras computes `xs` in (see the module docstring)."""
    kinds = [dtype_of(x) for x in xs]
    strong = [k for k in kinds if not isinstance(k, type)]
    weak = {k for k in kinds if isinstance(k, type)}
    if strong:
        found = np.dtype(functools.reduce(jnp.promote_types, strong))
    elif float in weak:
        return dtypes.as_dtype(config.floatx())
    elif int in weak:
        return dtypes.int32
    else:
        return dtypes.bool_
    if float in weak and found.kind in "biu":
        return dtypes.as_dtype(config.floatx())
    if int in weak and found.kind == "b":
        return dtypes.int32
    return dtypes.as_dtype(found)


def tensor(x: Any, dtype: Any = None) -> Tensor:
    """`x` as a tensor, cast to `dtype` when given (a Keras weight: read through its mirror in
    the graph being built)."""
    if dtype is None:
        return core_ops.convert_to_tensor(x)
    dtype = dtypes.as_dtype(dtype)
    if isinstance(x, Tensor) or hasattr(x, "_as_tensor"):
        t = core_ops.convert_to_tensor(x)
        return t if t.dtype == dtype else fill_ops.cast(t, dtype)
    return core_ops.convert_to_tensor(np.asarray(x).astype(dtype) if _is_array(x) else x, dtype)


def _is_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic, list, tuple))


def promoted(*xs: Any) -> list[Tensor]:
    """`xs` as tensors of their common Keras dtype."""
    dtype = result_dtype(*xs)
    return [tensor(x, dtype) for x in xs]


def floating(x: Any) -> Tensor:
    """`x` as a tensor, integers and bools cast to `floatx()` (for functions defined on reals)."""
    t = tensor(x)
    if dtypes.is_floating(t.dtype) or t.dtype.kind == "c":
        return t
    return fill_ops.cast(t, dtypes.as_dtype(config.floatx()))


def standard_dtype(dtype: Any, default: Any = None) -> np.dtype:
    """A dtype given by name or object, else `default` (else `floatx()`)."""
    if dtype is None:
        return dtypes.as_dtype(default if default is not None else config.floatx())
    return dtypes.as_dtype(getattr(dtype, "name", dtype))


def axes_of(axis: Any, rank: int | None) -> list[int] | None:
    """`axis` (None, an int or a sequence) as a list of non-negative axes (None: all)."""
    if axis is None:
        return None
    listed = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if rank is None:
        if any(a < 0 for a in listed):
            raise ValueError(f"Negative axes {axis} need a tensor of known rank.")
        return listed
    for a in listed:
        if not -rank <= a < rank:
            raise ValueError(f"axis {a} is out of bounds for a tensor of rank {rank}.")
    return [a % rank for a in listed]


def known_rank(x: Tensor, what: str) -> int:
    """`x`'s rank, which `what` needs known."""
    rank = x.shape.rank
    if rank is None:
        raise ValueError(f"{what} needs a tensor of known rank; got shape {x.shape}.")
    return rank
