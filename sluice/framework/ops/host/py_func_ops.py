"""`py_func` and `numpy_function`: a Python function on NumPy arrays as an op (TF1's PyFunc and
PyFuncStateless ops; `tf.py_func`, `tf.numpy_function`).

The function is kept in a table under a token ("pyfunc_3"), as TF1 keeps it, for as long as its
graph lives; the op holds the token and the result dtypes `Tout`. Its results have unknown
shapes unless the caller sets them (`y.set_shape(...)`), as in TF1.

Engines. The interpreted engine calls the function when the op runs. The compiled engine calls
it through `jax.experimental.io_callback` inside the jitted step, once per execution of the op
(every session.run, every loop iteration), so it must know the results' shapes while tracing:
an op whose results' shapes are not all known cannot be compiled, and a session with the default
engine ("auto") runs that graph interpreted, saying so once in a log line.

Errors, as TF1's kernel maps them: an exception in the function fails the run with
InvalidArgumentError (ValueError, TypeError), OutOfRangeError (StopIteration), ResourceExhausted
(MemoryError), Unimplemented (NotImplementedError) or UnknownError (anything else), carrying the
Python traceback; a result of another dtype than `Tout` says, e.g., "0-th value returned by
pyfunc_0 is double, but expects float". In the compiled engine the callback cannot raise (XLA
would abort the step after donating the variables' buffers), so it records the error and returns
its entry number through the op's `registry.Check`: the step then changes no variable and the
session raises the recorded error, of its own type.
"""

from __future__ import annotations

import traceback
import weakref
from typing import Any, Callable, Sequence

import jax
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes, errors
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation
from sluice.framework.ir.kernel_context import HostValueRequired
from sluice.framework.ir.registry import Check, not_differentiable, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ir.x64 import user_scope
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.host.host_callback import (
    call_on_host,
    callback_failed,
    new_token,
    raise_recorded,
    record_failure,
    tracing,
)

# -- the function table -------------------------------------------------------------------------
_FUNCS: dict[str, Callable] = {}


def _register_func(g: graph_lib.Graph, func: Callable) -> str:
    token = new_token("pyfunc")
    _FUNCS[token] = func
    weakref.finalize(g, _FUNCS.pop, token, None)  # the graph's ops hold only the token
    return token


# TF's names of dtypes, as its messages print them
_TF_NAMES = {
    "float16": "half",
    "float32": "float",
    "float64": "double",
    "bool": "bool",
    "complex64": "complex64",
    "complex128": "complex128",
    "bfloat16": "bfloat16",
}


def _tf_name(dtype: np.dtype) -> str:
    if dtype.kind in "SUO":
        return "string"
    return _TF_NAMES.get(dtype.name, dtype.name)


# -- calling the function -----------------------------------------------------------------------
_EXCEPTION_ERRORS = (  # TF1's py_func kernel's mapping; the first match wins
    ((ValueError, TypeError), errors.InvalidArgumentError),
    ((StopIteration,), errors.OutOfRangeError),
    ((MemoryError,), errors.ResourceExhaustedError),
    ((NotImplementedError,), errors.UnimplementedError),
)


def _error_for(op: Operation, err: BaseException) -> errors.OpError:
    frames = err.__traceback__.tb_next if err.__traceback__ else None  # from `func` on
    text = "".join(traceback.format_exception(type(err), err, frames))
    for kinds, error_type in _EXCEPTION_ERRORS:
        if isinstance(err, kinds):
            return error_type(None, op, text)
    return errors.UnknownError(None, op, text)


def _as_argument(value: Any) -> Any:
    """An input as the function sees it: a writable NumPy array, or a NumPy scalar for a
    scalar (TF1 passes 0-d values as scalars)."""
    array = np.asarray(value)
    if array.ndim == 0:
        return array[()]
    return array if array.flags.writeable else array.copy()


def _results(op: Operation, token: str, tout: tuple, returned: Any) -> tuple:
    """The function's return value as one array per output, checked against `Tout` and the
    outputs' static shapes; InvalidArgumentError when they disagree."""
    if isinstance(returned, (list, tuple)):
        values = [np.asarray(v) for v in returned]
    elif returned is None:
        values = []
    else:
        values = [np.asarray(returned)]
    if len(values) != len(tout):
        raise errors.InvalidArgumentError(
            None,
            op,
            f"{token} returns {len(values)} values, but expects to see {len(tout)} values.",
        )
    for i, (value, dtype, output) in enumerate(zip(values, tout, op.outputs)):
        if value.dtype != dtype:
            raise errors.InvalidArgumentError(
                None,
                op,
                f"{i}-th value returned by {token} is {_tf_name(value.dtype)}, but "
                f"expects {_tf_name(dtype)}",
            )
        if not output.shape.is_compatible_with(TensorShape(value.shape)):
            raise errors.InvalidArgumentError(
                None,
                op,
                f"{i}-th value returned by {token} has shape {value.shape}, but the "
                f"output's static shape is {output.shape}",
            )
    return tuple(values)


def _call(op: Operation, token: str, tout: tuple, inputs: Sequence[Any]) -> tuple:
    """Runs the function on the host; raises the OpError TF1 would."""
    func = _FUNCS.get(token)
    if func is None:
        raise errors.InternalError(None, op, f"callback {token} is not found (its graph is gone)")
    try:
        with user_scope():  # the user's function keeps the user's JAX setting
            returned = func(*[_as_argument(v) for v in inputs])
    except Exception as err:  # noqa: BLE001 (every exception becomes the run's OpError)
        raise _error_for(op, err) from err
    return _results(op, token, tout, returned)


def _traced_call(
    ctx: Any, op: Operation, token: str, tout: tuple, inputs: Sequence[Any], ordered: bool
) -> list:
    shapes = [t.shape for t in op.outputs]
    if not all(s.is_fully_defined() for s in shapes):
        raise HostValueRequired(
            f"the compiled engine needs the shapes of its results, which are unknown "
            f"({', '.join(str(s) for s in shapes)}); set them with set_shape() to compile it"
        )
    specs = [jax.ShapeDtypeStruct(tuple(s.as_list()), d) for s, d in zip(shapes, tout)]

    def host(*values: Any) -> tuple:
        try:
            return (*_call(op, token, tout, values), np.int64(0))
        except errors.OpError as err:
            return (*[np.zeros(s.shape, s.dtype) for s in specs], record_failure(err))

    return call_on_host(getattr(ctx, "live", True), token, host, specs, inputs, ordered)


# -- the ops ------------------------------------------------------------------------------------
def _py_func_infer(op) -> list:
    return [(dtype, TensorShape(None)) for dtype in op.get_attr("Tout")]


def _py_func_kernel(ordered: bool):
    def kernel(ctx, *inputs, token: str, Tout: tuple):
        op = ctx.op
        if tracing():
            outputs = _traced_call(ctx, op, token, Tout, inputs, ordered)
        else:
            outputs = _call(op, token, Tout, inputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return kernel


_CHECK = Check(callback_failed, raise_recorded)
# Both are stateful for the registry, PyFuncStateless too: the call must reach the host every
# time it runs, never be fused into a jitted group or folded into a constant. TF1 may merge two
# equal stateless calls; it never has to.
register_op(
    "PyFunc",
    infer=_py_func_infer,
    kernel=_py_func_kernel(ordered=True),
    stateful=True,
    check=_CHECK,
)
register_op(
    "PyFuncStateless",
    infer=_py_func_infer,
    kernel=_py_func_kernel(ordered=False),
    stateful=True,
    check=_CHECK,
)
not_differentiable("PyFunc", "PyFuncStateless")  # as TF1: gradients() gives None through them


@export("py_func")
def py_func(
    func: Callable,
    inp: Sequence[Any],
    Tout: Any,  # noqa: N803 (TF1's name)
    stateful: bool = True,
    name: str | None = None,
) -> Any:
    """An op that runs `func` on NumPy arrays when it runs (TF1's `tf.py_func`).

    Args:
      func: called as `func(*arrays)` with one NumPy array (a NumPy scalar for a scalar) per
        input; returns one array for one output, a list or tuple of them for several, None
        for none. Each must have exactly its `Tout` dtype.
      inp: a list of Tensors (or values), the inputs.
      Tout: a dtype, or a list or tuple of dtypes (then the result is a list).
      stateful: True (the default): every run calls `func`; False: `func` is a pure
        function of its inputs (a "PyFuncStateless" op).
      name: a name for the operation.

    Returns:
      A Tensor when `Tout` is one dtype; a list of Tensors when it is a list or tuple (the
      Operation when that list is empty). Their shapes are unknown until set (`set_shape`).

    Raises:
      ValueError: `func` is not callable.
      TypeError: `inp` is not a list or tuple.
      At run time, the OpError TF1 maps `func`'s exception to (see the module docstring).

    >>> x = sl.placeholder(sl.float32, [3])
    >>> y = sl.py_func(lambda a: np.sort(a)[::-1].copy(), [x], sl.float32)
    >>> y.set_shape([3])  # optional: lets the compiled engine call it from its jitted step
    >>> sl.Session().run(y, {x: [2.0, 3.0, 1.0]})
    array([3., 2., 1.], dtype=float32)
    """
    if not callable(func):
        raise ValueError(f"Expected func to be callable, got func of type {type(func)}.")
    if not isinstance(inp, (list, tuple)):
        raise TypeError(f"py_func: inp must be a list of Tensors, got {inp!r}.")
    returns_list = isinstance(Tout, (list, tuple))
    if any(t is None for t in (Tout if returns_list else [Tout])):
        raise TypeError(f"py_func: Tout must be a dtype or a list of dtypes, got {Tout!r}.")
    tout = tuple(dtypes.as_dtype(t) for t in (Tout if returns_list else [Tout]))
    inputs = [convert_to_tensor(x) for x in inp]
    g = graph_lib.graph_of(inputs) if inputs else graph_lib.get_default_graph()
    token = _register_func(g, func)
    op_type = "PyFunc" if stateful else "PyFuncStateless"
    op = apply_op(op_type, inputs, {"token": token, "Tout": tout}, name=name or op_type)
    if returns_list:
        return list(op.outputs) if op.outputs else op
    return op.outputs[0]


@export("numpy_function")
def numpy_function(
    func: Callable,
    inp: Sequence[Any],
    Tout: Any,  # noqa: N803
    name: str | None = None,
) -> Any:
    """`py_func(func, inp, Tout, stateful=True, name)` (TF1's `tf.numpy_function`).

    >>> y = sl.numpy_function(lambda a: a * 2, [sl.constant([1, 2])], sl.int32)
    >>> sl.Session().run(y)
    array([2, 4], dtype=int32)
    """
    return py_func(func, inp, Tout, stateful=True, name=name)


__all__ = ["numpy_function", "py_func"]
