"""A pruned graph as a pure JAX function: what Keras's `stateless_call` stands on.

    fn = PureFunction(pruned, bound=["dense/kernel", "dense/bias"])
    fetch_values, new_values = fn(values, feed_values)

`fn` evaluates the ops of `pruned` with the compiled engine's lowering (`step.frames_of`,
`step.evaluate`, the same code a session's compiled step traces), reading the bound variables
from `values` instead of a session, and returns the fetched values and the value of every bound
variable after the ops ran (the value given, for a variable no op assigns), in `bound`'s order.
It reads and writes nothing else and calls nothing on the host, so `jax.jit`, `jax.grad`,
`jax.value_and_grad` and `jax.vmap` transform it like any JAX function; without a transform, it
runs op by op (JAX's eager mode). It traces under sluice's 64-bit scope (`ir.x64`), so the
graph's dtypes are kept whatever the caller's `jax_enable_x64` is.

Random ops. Stateless random ops, keyed by a seed tensor (Keras's random ops, keyed by a
`SeedGenerator`'s state variable), need nothing more: their draws depend only on the values
passed. A TF1 random op (`RandomUniform`, ...) draws from a per-op counter that its session
keeps: bind it as `RandomCounter(op_name)` in `bound` to pass the counter with the values and get
the advanced one back; unbound, building the function raises ValueError naming the op.

Loops. A while loop whose trip count is known while tracing (a static sequence length, a
`maximum_iterations` reached by a counter) lowers to `lax.scan`, which JAX differentiates in
both modes. A loop that runs a data-dependent number of times lowers to `lax.while_loop`, which
reverse mode cannot differentiate: `jax.grad` or `jax.vjp` through such a function raises
NotImplementedError naming the loop (and forward mode is refused there too, since the guard is a
`jax.custom_vjp`); its forward values are computed as usual.

Checking ops (`CheckNumerics`, a sparse cross-entropy's label range) are evaluated but not
enforced: a pure function cannot stop at run time, as JAX code under `jax.jit` cannot raise.
Host ops (queues, iterators, `py_func`, `Print`, `Assert`) are refused when the function is
built, with NotImplementedError naming the op.

>>> from sluice.framework.prune import prune
>>> x = sl.placeholder(sl.float32, [2])
>>> w = sl.Variable([1.0, 2.0], name="w")
>>> y = sl.reduce_sum(w * x)
>>> fn = PureFunction(prune([y], [], [x]), bound=[w.op.get_attr("shared_name")])
>>> jax.grad(lambda ws: fn(ws, [np.float32([3, 4])])[0][0])([jnp.float32([1, 2])])
[Array([3., 4.], dtype=float32)]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice.framework.compiler.frame import Frame, NotLowerable
from sluice.framework.compiler.step import evaluate, frames_of
from sluice.framework.compiler.trace_context import TraceContext
from sluice.framework.ir.graph import Operation
from sluice.framework.ir.x64 import x64_scope
from sluice.framework.prune import Pruned

# The stateful ops a pure function runs: on variables (bound values), on stacks (lowered to
# buffers of the trace); random ops are recognised by their seed attributes.
_VARIABLE_OPS = frozenset(
    {
        "VarHandleOp",
        "ReadVariableOp",
        "ReadVariableOrInitialValue",
        "VarIsInitializedOp",
        "AssignVariableOp",
        "AssignAddVariableOp",
        "AssignSubVariableOp",
        "ResourceScatterAdd",
        "ResourceScatterSub",
        "ResourceScatterUpdate",
    }
)
_STACK_OPS = frozenset({"StackV2", "StackPushV2", "StackPopV2"})


@dataclasses.dataclass(frozen=True)
class RandomCounter:
    """The per-op counter of a TF1 random op, bound to a `PureFunction` like a variable: its
    value is the number of draws made so far (an int64 scalar)."""

    op_name: str


def is_random(op: Operation) -> bool:
    """Whether `op` draws from a session's per-op counter (a TF1 random op)."""
    return op.op_def.stateful and "seed" in op.attrs


class PureFunction:
    """`fn(values, feed_values) -> (fetch_values, new_values)`: the ops of `pruned` as a pure
    function of the bound variables' values and the feeds (see the module docstring).

    Args:
      pruned: the ops to run (`prune(fetches, targets, feeds)`): the fetches are returned, the
        targets (assignments, such as a BatchNormalization's moving statistics) run.
      bound: the variables the function takes and returns, by shared name (a graph Variable's
        `op.get_attr("shared_name")`), and the `RandomCounter`s of its TF1 random ops.
      roll_repeats: as `SessionConfig.roll_repeats`.

    Raises:
      ValueError: an op uses a variable or a TF1 random op that is not bound.
      NotImplementedError: an op runs on the host, or cannot be lowered.
    """

    def __init__(self, pruned: Pruned, bound: Sequence[str | RandomCounter], roll_repeats=True):
        self.bound = tuple(bound)
        self.feeds = tuple(pruned.feeds)
        self.fetches = tuple(pruned.fetches)
        if len(set(self.bound)) != len(self.bound):
            raise ValueError(f"A variable is bound twice: {list(self.bound)}.")
        variables = {b for b in self.bound if isinstance(b, str)}
        counters = {b.op_name for b in self.bound if isinstance(b, RandomCounter)}
        self._specs: dict[str, tuple] = {}  # shared name -> (dtype, shape) of the bound variable
        for op in pruned.ops:
            self._check_op(op, variables, counters)
        try:
            self.root: Frame = frames_of(pruned, roll_repeats)
        except NotLowerable as err:
            raise NotImplementedError(f"This graph cannot be a pure JAX function: {err}") from None

    def _check_op(self, op: Operation, variables: set[str], counters: set[str]) -> None:
        if op.type == "VarHandleOp":
            name = op.get_attr("shared_name")
            if name not in variables:
                raise ValueError(
                    f"Op {op.name!r} uses the variable {name!r}, which is not bound: a pure "
                    f"function reads only the values it is given (bound: {sorted(variables)})."
                )
            shape = op.get_attr("shape")
            self._specs[name] = (op.get_attr("dtype"), _dims(shape))
        elif is_random(op):
            if op.name not in counters:
                raise ValueError(
                    f"Op {op.name!r} ({op.type}) draws from its session's per-op counter; a pure "
                    f"function needs it bound (RandomCounter({op.name!r})), or random ops keyed "
                    "by a seed value (keras.random with a SeedGenerator, sl.random.stateless_*)."
                )
        elif op.op_def.stateful and op.type not in _VARIABLE_OPS | _STACK_OPS:
            raise NotImplementedError(
                f"Op {op.name!r} ({op.type}) acts on the host or on session state, which a pure "
                "JAX function cannot do."
            )

    def __call__(self, values: Sequence[Any], feed_values: Sequence[Any]) -> tuple[list, list]:
        """The fetched values and the bound variables' new values (see the class docstring).

        Raises:
          ValueError: a count, shape or dtype that does not fit; a fetch on a branch not taken.
          NotImplementedError: (under `jax.grad`) reverse differentiation through a while loop
            of data-dependent length.
        """
        values, feed_values = list(values), list(feed_values)
        if len(values) != len(self.bound):
            raise ValueError(f"Expected {len(self.bound)} bound values, got {len(values)}.")
        if len(feed_values) != len(self.feeds):
            raise ValueError(f"Expected {len(self.feeds)} feed values, got {len(feed_values)}.")
        with x64_scope():
            variables, counts = {}, {}
            for b, value in zip(self.bound, values):
                if isinstance(b, RandomCounter):
                    counts[b.op_name] = jnp.asarray(value, jnp.int64)
                elif b in self._specs:
                    variables[b] = _as_value(value, *self._specs[b], f"variable {b!r}")
                else:  # bound but unused: passed through
                    variables[b] = value
            feeds = [
                _as_value(v, t.dtype, _dims(t.shape), f"feed {t.name!r}")
                for t, v in zip(self.feeds, feed_values)
            ]
            ctx = TraceContext(dict(variables), dict(counts))
            env, _ = evaluate(self.root, list(self.feeds), feeds, ctx, (), _no_reverse_mode)
            fetched = []
            for t in self.fetches:
                value, live = env[t]
                if live is False:
                    raise ValueError(f"Tensor {t.name!r} lies on a branch that is not taken.")
                fetched.append(value)
            new = [
                ctx.random_counts[b.op_name] if isinstance(b, RandomCounter) else ctx.variables[b]
                for b in self.bound
            ]
        return fetched, new


def _dims(shape: Any) -> tuple | None:
    """A TensorShape as a tuple (None entries: unknown sizes; None: unknown rank)."""
    return None if shape.rank is None else tuple(shape.as_list())


def _as_value(value: Any, dtype: Any, shape: tuple | None, what: str) -> Any:
    """`value` as a JAX value of `dtype`, checked against `shape` (None entries: any size)."""
    got = tuple(np.shape(value))
    if shape is not None and (
        len(got) != len(shape) or any(d is not None and d != g for d, g in zip(shape, got))
    ):
        raise ValueError(f"The value of {what} has shape {got}, expected {shape}.")
    if isinstance(value, jax.Array) and value.dtype == dtype:
        return value
    return jnp.asarray(value, dtype)


def _no_reverse_mode(frame: Frame, result: Any) -> Any:
    """`result` (a lax.while_loop's) through an identity whose reverse-mode rule raises."""
    name = frame.ctx.name

    @jax.custom_vjp
    def guard(x: Any) -> Any:
        return x

    def forward(x: Any) -> tuple[Any, None]:
        return x, None

    def backward(_: Any, cotangent: Any) -> Any:
        raise NotImplementedError(
            f"The while loop {name!r} runs a number of iterations known only at run time: it "
            "lowers to lax.while_loop, which JAX cannot differentiate in reverse mode. Give it a "
            "static trip count (static shapes, e.g. a fixed sequence length, or "
            "maximum_iterations reached by a counter) or unroll it (unroll=True)."
        )

    guard.defvjp(forward, backward)
    return guard(result)
