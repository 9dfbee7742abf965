"""TF1's functional ops, which take defined functions (`Defun`) as arguments: `If`, `While`,
`For`, `Gradient` (SymbolicGradient), `partitioned_call`, `remote_call`.

Each is built from sluice's control flow with the functions inlined (see defun.py): `If` is a
`cond`, `While` and `For` are a `while_loop`, `Gradient` is `gradients` of an inlined call, and
the two calls inline the function (on `target`'s device for `remote_call`). The results pass
through one IdentityN named as TF1 names the op (`name`, else "If", "While", "For"), so
`"my_while:1"` fetches by name as in TF1. Semantics, as plain Python::

    If(c, xs, then_f, else_f)        = then_f(*xs) if c else else_f(*xs)
    While(xs, cond_f, body_f)        : while cond_f(*xs): xs = body_f(*xs);  return xs
    For(start, limit, delta, xs, f)  : for i in range(start, limit, delta): xs = f(i, *xs)
    Gradient(xs + dys, f)            = gradients(f(*xs), xs, grad_ys=dys)

TF1 checks the functions' results when the op runs; sluice knows them when the op is built,
and raises the same InvalidArgumentError then.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._tf1.function.defun import as_defined
from sluice.framework.autodiff.gradients import gradients
from sluice.framework.control_flow.cond import cond as cond_v1
from sluice.framework.control_flow.while_loop import while_loop
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.errors import InvalidArgumentError
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array.fill_ops import zeros_like
from sluice.framework.ops.array.identity_n_ops import identity_n
from sluice.framework.ops.control.assert_ops import Assert
from sluice.framework.ops.core.core_ops import convert_to_tensor, no_op
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.math import math_ops

_MODULE = "python.ops.functional_ops"


def _results(outputs: list[Tensor], scope: str, control: Any = None) -> list[Tensor]:
    """The op's results as one IdentityN named `scope` (a NoOp when there are none)."""
    g = graph_lib.get_default_graph()
    with g.control_dependencies(control or []):
        if not outputs:
            no_op(name=scope)
            return []
        return list(identity_n(outputs, name=scope))


def _as_bool(pred: Tensor) -> Tensor:
    # TF1: a non-boolean scalar is true when it is not zero
    return pred if pred.dtype == dtypes.bool_ else math_ops.not_equal(pred, 0)


def _typed(values: list, types: Any, who: str) -> list[Tensor]:
    values = list(values)
    if len(values) != len(types):
        raise ValueError(f"{who}: {len(values)} inputs for a function of {len(types)} arguments.")
    return [convert_to_tensor(v, dtype=t) for v, t in zip(values, types)]


@export(f"{_MODULE}.If")
def If(cond: Any, inputs: list, then_branch: Any, else_branch: Any, name: str | None = None):  # noqa: N802
    """`then_branch(*inputs)` if `cond` else `else_branch(*inputs)` (TF1's If op): a list of
    results. A non-boolean scalar `cond` is true when not zero."""
    inputs = [convert_to_tensor(x) for x in inputs]
    types = [t.dtype for t in inputs]
    then_f, else_f = as_defined(then_branch, types), as_defined(else_branch, types)
    g = graph_lib.get_default_graph()
    with g.name_scope(name or "If") as scope:
        pred = _as_bool(convert_to_tensor(cond))
        merged = cond_v1(
            pred,
            lambda: then_f.call(inputs)[0],
            lambda: else_f.call(inputs)[0],
            strict=True,
        )
        merged = list(merged) if isinstance(merged, (list, tuple)) else [merged]
        return _results(merged, scope)


@export(f"{_MODULE}.While")
def While(input_: list, cond: Any, body: Any, name: str | None = None, hostmem: Any = None):  # noqa: N802
    """Runs `body` while `cond` holds on the loop values (TF1's While op): the final values.

    Raises:
      ValueError: `cond` uses tensors from outside (TF1 passes only the loop values to it), or
        `cond` and `body` take different dtypes.
      InvalidArgumentError: `cond` returns more than one tensor, or `body` a number of values
        other than the loop's.
    """
    del hostmem
    types = [convert_to_tensor(x).dtype for x in input_]
    cond_f, body_f = as_defined(cond, types), as_defined(body, types)
    if cond_f.captured_inputs:
        raise ValueError(
            "While op 'cond' argument must be a function without implicitly captured inputs."
        )
    if cond_f.declared_input_types != body_f.declared_input_types:
        raise ValueError(
            "While op 'cond' and 'body' signatures do not match. "
            f"{cond_f.declared_input_types} vs {body_f.declared_input_types}"
        )
    loop_vars = _typed(input_, body_f.declared_input_types, "While")

    def cond_fn(*values: Tensor) -> Tensor:
        results = cond_f.call(list(values))[0]
        if len(results) != 1:
            raise InvalidArgumentError(
                None,
                None,
                f"Expected a single scalar predicate from While 'cond' {cond_f.name!r}, "
                f"got {len(results)} tensors.",
            )
        return _as_bool(results[0])

    def body_fn(*values: Tensor) -> list[Tensor]:
        results = body_f.call(list(values))[0]
        if len(results) != len(values):
            raise InvalidArgumentError(
                None,
                None,
                f"While loop body returned {len(results)} arguments. Expected: {len(values)}.",
            )
        return results

    g = graph_lib.get_default_graph()
    with g.name_scope(name or "While") as scope:
        final = while_loop(
            cond_fn,
            body_fn,
            loop_vars,
            shape_invariants=_invariants(loop_vars),
            return_same_structure=True,
        )
        return _results(list(final), scope)


def _invariants(loop_vars: list[Tensor]) -> list[TensorShape] | None:
    """None (each loop value keeps its shape) when every shape is known; else any shape for
    all, as TF1's While op, which checks no shapes: a value of unknown shape (a placeholder's)
    makes the results of the others unknown too."""
    if all(t.shape.is_fully_defined() for t in loop_vars):
        return None
    return [TensorShape(None) for _ in loop_vars]


def _static_int(t: Tensor) -> int | None:
    value = constant_value(t)
    return None if value is None or value.shape != () else int(value)


def _check_range(start: Tensor, limit: Tensor, delta: Tensor) -> list[Operation]:
    """TF1's For kernel checks: scalar bounds and a delta that reaches `limit`. Known values
    are checked now; others by an Assert that the loop runs after."""
    for what, t in (("start", start), ("limit", limit), ("delta", delta)):
        if t.shape.rank is not None and t.shape.rank != 0:
            raise InvalidArgumentError(None, None, f"{what} must be a scalar: {t.shape}")
    values = [_static_int(t) for t in (start, limit, delta)]
    message = "Invalid start/limit/delta"
    if None not in values:
        s, lim, d = values
        if not ((d > 0 and s <= lim) or (d < 0 and s >= lim) or (d == 0 and s == lim)):
            raise InvalidArgumentError(None, None, f"{message}: {s} {lim} {d}")
        return []
    up = math_ops.logical_and(delta > 0, start <= limit)
    down = math_ops.logical_and(delta < 0, start >= limit)
    still = math_ops.logical_and(math_ops.equal(delta, 0), math_ops.equal(start, limit))
    ok = math_ops.logical_or(math_ops.logical_or(up, down), still)
    return [Assert(ok, [message + ": ", start, limit, delta])]


@export(f"{_MODULE}.For")
def For(  # noqa: N802
    start: Any,
    limit: Any,
    delta: Any,
    inputs: list,
    body: Any,
    name: str | None = None,
    hostmem: Any = None,
    rewrite_with_while: Any = None,
) -> list[Tensor]:
    """`for i in range(start, limit, delta): inputs = body(i, *inputs)` (TF1's For op): the
    final inputs. The op is named "While" when `rewrite_with_while`, as TF1's rewrite names it.

    Raises:
      InvalidArgumentError: a bound is not a scalar, `delta` does not reach `limit`, or `body`
        returns a number of values other than `inputs`'.
    """
    del hostmem
    bounds = [convert_to_tensor(x, dtype=dtypes.int32) for x in (start, limit, delta)]
    inputs = [convert_to_tensor(x) for x in inputs]
    body_f = as_defined(body, [dtypes.int32] + [t.dtype for t in inputs])
    loop_vars = _typed(inputs, body_f.declared_input_types[1:], "For")
    g = graph_lib.get_default_graph()
    with g.name_scope(name or ("While" if rewrite_with_while else "For")) as scope:
        checks = _check_range(*bounds)
        start_t, limit_t, delta_t = bounds

        def cond_fn(i: Tensor, *values: Tensor) -> Tensor:
            up = math_ops.logical_and(delta_t > 0, i < limit_t)
            return math_ops.logical_or(up, math_ops.logical_and(delta_t < 0, i > limit_t))

        def body_fn(i: Tensor, *values: Tensor) -> list[Tensor]:
            results = body_f.call([i, *values])[0]
            if len(results) != len(values):
                raise InvalidArgumentError(
                    None,
                    None,
                    f"For loop body returned {len(results)} arguments. Expected: {len(values)}.",
                )
            return [i + delta_t, *results]

        with g.control_dependencies(checks):
            first = math_ops.add(start_t, 0, name="start")
        final = while_loop(
            cond_fn,
            body_fn,
            [first, *loop_vars],
            shape_invariants=_invariants([first, *loop_vars]),
            return_same_structure=True,
        )
        return _results(list(final[1:]), scope, control=[final[0].op])


@export(f"{_MODULE}.Gradient", "python.ops.gen_functional_ops.symbolic_gradient")
def Gradient(inputs: list, f: Any, name: str | None = None) -> list[Tensor]:  # noqa: N802
    """The gradients of `f`'s inputs (TF1's SymbolicGradient): `inputs` are `f`'s arguments
    followed by one gradient per result of `f`; unconnected inputs get zeros."""
    inputs = list(inputs)
    f_def = as_defined(f, [convert_to_tensor(x).dtype for x in inputs])
    n = len(f_def.declared_input_types)
    g = graph_lib.get_default_graph()
    with g.name_scope(name or "SymbolicGradient"):
        traced, outputs, _ = f_def.call_traced(inputs[:n])
        dys = inputs[n:]
        if len(dys) != len(outputs):
            raise ValueError(
                f"SymbolicGradient of {f_def.name!r}: {len(dys)} output gradients for "
                f"{len(outputs)} results."
            )
        dys = [convert_to_tensor(d, dtype=y.dtype) for d, y in zip(dys, outputs)]
        grads = gradients(outputs, traced.inputs, grad_ys=dys)
        return [zeros_like(x) if gr is None else gr for x, gr in zip(traced.inputs, grads)]


@export("python.ops.gen_functional_ops.case")
def case(
    branch_index: Any,
    input: list,  # noqa: A002  (TF1's name)
    Tout: Any,  # noqa: N803
    branches: list,
    output_shapes: Any = None,
    name: str | None = None,
) -> list[Tensor]:
    """`branches[branch_index](*input)` (TF1's Case op), an index out of `[0, N)` taking the
    last branch: a list of results, of the dtypes `Tout`.

    Raises:
      ValueError: no branches, or a branch's results differ from `Tout`.
    """
    del output_shapes
    if not branches:
        raise ValueError("Case needs at least one branch.")
    inputs = [convert_to_tensor(x) for x in input]
    types = [t.dtype for t in inputs]
    fns = [as_defined(b, types) for b in branches]
    tout = [dtypes.as_dtype(t) for t in Tout]
    g = graph_lib.get_default_graph()
    with g.name_scope(name or "Case") as scope:
        index = convert_to_tensor(branch_index, dtype=dtypes.int32)

        def branch(k: int) -> list[Tensor]:
            results = fns[k].call(inputs)[0]
            if [t.dtype for t in results] != tout:
                raise ValueError(
                    f"Case: branch {k} ({fns[k].name!r}) returns "
                    f"{[t.dtype.name for t in results]}, Tout is {[t.name for t in tout]}."
                )
            return results

        def from_branch(k: int) -> list[Tensor]:
            if k == len(fns) - 1:  # the last branch is the default
                return branch(k)
            taken = math_ops.equal(index, k)
            return cond_v1(taken, lambda: branch(k), lambda: from_branch(k + 1), strict=True)

        results = from_branch(0)
        results = list(results) if isinstance(results, (list, tuple)) else [results]
        return _results(results, scope)


def _call(args: list, f: Any, name: str | None, device: Any = None) -> Any:
    args = [convert_to_tensor(a) for a in args]
    f_def = as_defined(f, [a.dtype for a in args])
    n = len(f_def.declared_input_types)
    # TF1 passes the captured inputs as trailing arguments; the inlined body uses them itself
    if len(args) not in (n, n + len(f_def.captured_inputs)):
        raise ValueError(
            f"Function {f_def.name!r} takes {n} arguments "
            f"(and {len(f_def.captured_inputs)} captured), got {len(args)}."
        )
    g = graph_lib.get_default_graph()
    if device is None:
        return f_def.call(args[:n], name=name)
    with g.device(device):
        return f_def.call(args[:n], name=name)


_EXECUTORS = ("", "DEFAULT", "SINGLE_THREADED_EXECUTOR")


@export(f"{_MODULE}.partitioned_call")
def partitioned_call(
    args: list,
    f: Any,
    tout: Any = None,
    executing_eagerly: Any = None,
    config: Any = None,
    executor_type: str | None = None,
) -> list[Tensor] | Operation:
    """Calls `f` on `args` (TF1's PartitionedCall): the list of results, or the call's
    Operation when `f` returns nothing. The body's ops keep their device scopes.

    Raises:
      ValueError: an `executor_type` sluice does not have (TF1 raises NotFoundError when the
        op runs).
    """
    del tout, executing_eagerly, config
    if executor_type not in (None, *_EXECUTORS):
        raise ValueError(f"No executor registered for the executor type {executor_type!r}.")
    outputs, op = _call(args, f, None)
    return outputs if outputs else op


@export(f"{_MODULE}.remote_call")
def remote_call(
    args: list, Tout: Any, f: Any, target: Any, name: str | None = None
) -> list[Tensor] | Operation:  # noqa: N803
    """Calls `f` on `args` on the device `target` (TF1's RemoteCall): the list of results."""
    del Tout
    outputs, op = _call(args, f, name, device=target)
    return outputs if outputs else op
