"""Debugging ops: CheckNumerics (TF1 `tf.debugging.check_numerics`, `tf.add_check_numerics_ops`).

`check_numerics(t, message)` returns `t` unchanged when it holds no NaN or Inf; when it does, the
run fails with `InvalidArgumentError` naming the op and "<message> : Tensor had NaN values" (or
"Inf", or "Inf and NaN"), as TF's kernel says, in both engines. The op's `Check` (see
`registry.Check`) carries the condition: the interpreted engine tests it before the kernel runs,
the compiled engine returns it from the jitted step and changes no variable when it fails.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.registry import Check, register_gradient, register_op
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor, group
from sluice.framework.ops.core.shape_rules import require_dtype

_NAN, _INF = 1, 2  # bits of the check's detail
_FOUND = {_NAN: "NaN", _INF: "Inf", _NAN | _INF: "Inf and NaN"}


# -- CheckNumerics ------------------------------------------------------------------------------
def _check_numerics_infer(op) -> list:
    x = op.inputs[0]
    require_dtype(x, "floating", dtypes.is_floating)
    return [(x.dtype, x.shape)]


def _non_finite(x, *, message):
    """(any NaN or Inf, which of them as bits)."""
    nan, inf = jnp.any(jnp.isnan(x)), jnp.any(jnp.isinf(x))
    detail = jnp.where(nan, _NAN, 0) | jnp.where(inf, _INF, 0)
    return nan | inf, detail.astype(jnp.int64)


def _non_finite_message(op: Operation, detail: int) -> str:
    return f"{op.get_attr('message')} : Tensor had {_FOUND.get(detail, 'NaN or Inf')} values"


register_op(
    "CheckNumerics",
    infer=_check_numerics_infer,
    kernel=lambda x, *, message: x,
    check=Check(_non_finite, _non_finite_message),
)


@register_gradient("CheckNumerics")
def _check_numerics_grad(op, grad):
    """The gradient passes through, checked too (TF1's rule)."""
    message = op.get_attr("message")
    return [
        check_numerics(
            grad, f"Not a number (NaN) or infinity (Inf) values detected in gradient. {message}"
        )
    ]


@export("check_numerics", "debugging.check_numerics")
def check_numerics(tensor: Any, message: str, name: str | None = None) -> Tensor:
    """`tensor`, after checking that it holds no NaN or Inf (TF1 `tf.check_numerics`).

    Args:
      tensor: a floating-point Tensor.
      message: the start of the error message.
      name: a name for the operation.

    Returns:
      A Tensor equal to `tensor`; use it in place of `tensor` so the check runs.

    Raises:
      InvalidArgumentError: when run on a value with a NaN or Inf:
        "<message> : Tensor had NaN values" (or "Inf values", "Inf and NaN values").

    >>> x = sl.placeholder(sl.float32, [1])
    >>> y = sl.check_numerics(sl.log(x), "log of x")
    >>> sl.Session().run(y, {x: [-1.0]})
    Traceback (most recent call last):
    ...
    sluice.framework.ir.errors.InvalidArgumentError: log of x : Tensor had NaN values
         [[node CheckNumerics (op CheckNumerics)]]
    """
    tensor = convert_to_tensor(tensor, name="tensor")
    return apply_op("CheckNumerics", [tensor], {"message": str(message)}, name).outputs[0]


@export("add_check_numerics_ops", "debugging.add_check_numerics_ops")
def add_check_numerics_ops() -> Operation:
    """A `check_numerics` on every floating-point output of the default graph's ops, run in
    graph order; returns one op that runs them all (TF1 `tf.add_check_numerics_ops`). Each
    message is "<op name>:<output index>".

    Raises:
      ValueError: when the graph has ops inside a cond or while loop (as in TF1, the checks
        cannot be placed in control flow).

    >>> x, w = sl.placeholder(sl.float32, []), sl.Variable(1.0)
    >>> train_op = sl.train.GradientDescentOptimizer(0.1).minimize(sl.square(sl.log(x) * w))
    >>> check = sl.add_check_numerics_ops()
    >>> with sl.Session() as sess:
    ...     sess.run(w.initializer)
    ...     sess.run([train_op, check], {x: -1.0})  # names the first bad tensor
    Traceback (most recent call last):
    ...
    sluice.framework.ir.errors.InvalidArgumentError: Log:0 : Tensor had NaN values...
    """
    g = graph_lib.get_default_graph()
    checks: list[Operation] = []
    for op in g.get_operations():
        for output in op.outputs:
            if not dtypes.is_floating(output.dtype):
                continue
            if op.control_flow_context is not None:
                raise ValueError(
                    "`add_check_numerics_ops()` is not compatible with control flow operations "
                    f"such as `cond()` or `while_loop()` (op {op.name!r} is inside one)."
                )
            with g.control_dependencies(checks):  # one after the other, in graph order
                checks = [check_numerics(output, f"{op.name}:{output.value_index}").op]
    return group(*checks, name="CheckNumerics_all")
