"""A plan's node for one op (`PlanNode`), and how it runs its kernel.

Its dispatch record is what `plan` describes; `compute` runs the op's kernel (the host one when
every input is a small NumPy value) and checks its outputs' dtypes. Kernels are jitted and cached
per op and across ops with the same type and attrs. A partition's own nodes (Send, Recv, control
loops, see `partition_nodes`) are PlanNodes too, made by `PlanNode.without_op`.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import jax
import numpy as np

from sluice.framework.control_flow.structure import is_loop_merge
from sluice.framework.interpreter.kinds import (
    COND_MERGE,
    ENTER,
    EXIT,
    GATHER,
    IMMEDIATE,
    LOOP_MERGE,
    LOOPCOND,
    MERGE,
    NEXT,
    NORMAL,
    SWITCH,
)
from sluice.framework.ir import dtypes, errors, registry, string_values
from sluice.framework.ir.graph import Operation
from sluice.framework.ops.host import host_kernels
from sluice.framework.ops.host.host_kernels import HOST_MAX_ELEMENTS
from sluice.framework.prune import DEAD

_KINDS = {
    "Switch": SWITCH,
    "Merge": MERGE,
    "Enter": ENTER,
    "Exit": EXIT,
    "NextIteration": NEXT,
    "LoopCond": LOOPCOND,
}


def _arrival(kind: int, num_pending: int, is_loop_merge: bool) -> int:
    if kind == MERGE:
        # A loop Merge gets one token per iteration: the Enter's first, then NextIteration's.
        return LOOP_MERGE if is_loop_merge else COND_MERGE
    return IMMEDIATE if num_pending == 1 else GATHER


class PlanNode:
    """A pruned op with its dispatch record (see the module docstring) and its kernels; or, made
    by `without_op`, a node a partition adds (see `partition_nodes`). Both are of this one class:
    the executor reads a node's attributes at every dispatch, and CPython specialises each such
    read for one class, so a second class there misses (W5's loop on one device cost 7% more with
    its two NextIterations of another class)."""

    __slots__ = (
        "op",
        "name",
        "edge",
        "key",
        "value",
        "pivot",
        "expected",
        "kind",
        "arrival",
        "num_inputs",
        "num_pending",
        "edges",
        "fetch_ports",
        "num_ops",
        "dead_outputs",
        "run",
        "host",
        "stateful",
        "single_output",
        "checked_dtypes",
        "merge_indices",
        "frame_name",
        "is_constant",
        "parallel_iterations",
    )

    def __init__(self, op: Operation):
        self.op = op
        self.name = op.name
        self.edge = self.key = self.value = self.pivot = None  # a partition's nodes' (below)
        self.expected = 0
        self.kind = _KINDS.get(op.type, NORMAL)
        self.num_inputs = len(op.inputs)
        self.num_pending = len(op.inputs) + len(op.control_inputs)
        self.arrival = _arrival(self.kind, self.num_pending, is_loop_merge(op))
        self.edges: list[tuple[int, Any, int]] = []
        self.fetch_ports: list[tuple[int, int]] = []
        self.num_ops = 1
        self.dead_outputs = (DEAD,) * len(op.outputs)
        strings = string_values.on_strings(op)
        self.run = _kernel_for(op, strings) if self.kind == NORMAL else None
        host = None if strings else registry.specialised_kernel(op.type, "host")
        if host is not None and op.type in host_kernels.ATTRIBUTED:
            host = functools.partial(host, **op.attrs)
        self.host = host
        if op.op_def.check is not None:  # ops that validate their inputs raise before the kernel
            self.run = _checked(op, self.run)
            self.host = _checked(op, host) if host is not None else None
        self.stateful = op.op_def.stateful
        self.single_output = len(op.outputs) == 1
        self.checked_dtypes = [
            (i, t.dtype, _scalar_type(t.dtype))
            for i, t in enumerate(op.outputs)
            if t.dtype is not dtypes.resource
        ]
        self.merge_indices = tuple(np.int32(i) for i in range(self.num_inputs))
        self.frame_name = op.get_attr("frame_name") if self.kind == ENTER else None
        self.is_constant = bool(op.get_attr("is_constant")) if self.kind == ENTER else False
        self.parallel_iterations = (
            int(op.get_attr("parallel_iterations")) if self.kind == ENTER else 0
        )

    @classmethod
    def without_op(
        cls,
        name: str,
        kind: int,
        num_inputs: int,
        num_pending: int,
        num_outputs: int,
        arrival: int | None = None,
    ) -> PlanNode:
        """A node with no graph op behind it: a partition's Send, Recv or control-loop part
        (see `partition_nodes`); `name` says what it is in errors and traces. Its kernel, run
        only for a NORMAL one (a control loop's constant), gives its `value`. Its fields beyond
        an op node's: `edge`, a Send's or Recv's CutEdge, and `key`, its rendezvous key less the
        tag (the CutEdge itself); `value`, a constant's value; `pivot`, a control loop's
        `pivot_edges`; `expected`, how many values a sender-driven Recv's iteration takes."""
        node = cls.__new__(cls)
        node.op = None
        node.name = name
        node.edge = node.key = node.value = node.pivot = None
        node.expected = 0
        node.kind = kind
        node.num_inputs = num_inputs
        node.num_pending = num_pending
        node.arrival = arrival if arrival is not None else _arrival(kind, num_pending, False)
        node.edges = []
        node.fetch_ports = []
        node.num_ops = 1
        node.dead_outputs = (DEAD,) * num_outputs
        node.run = functools.partial(getattr, node, "value")
        node.host = None
        node.stateful = False
        node.single_output = True
        node.checked_dtypes = []
        node.merge_indices = tuple(np.int32(i) for i in range(num_inputs))
        node.frame_name = None
        node.is_constant = False
        node.parallel_iterations = 0
        return node

    def __repr__(self) -> str:
        return f"<{self.name}>" if self.op is None else object.__repr__(self)

    def compute(self, ctx: Any, inputs: Any) -> tuple:
        """Runs the op's kernel (the host one when every input is a small NumPy value) and returns
        its outputs as a tuple, checking their dtypes against the op's."""
        try:
            if self.stateful:
                ctx.op = self.op
                result = self.run(ctx, *inputs)
            elif self.host is not None and _all_on_host(inputs):
                result = self.host(*inputs)
            else:
                result = self.run(*inputs)
        except errors.OpError:
            raise
        except (TypeError, ValueError, IndexError, ZeroDivisionError) as err:
            op = self.op
            seen = ", ".join(_describe(x) for x in inputs)
            raise errors.InvalidArgumentError(
                None, op, f"{op.type} op '{op.name}' failed on inputs ({seen}): {err}"
            ) from err
        outputs = (result,) if self.single_output else result
        for i, dtype, scalar_type in self.checked_dtypes:
            value = outputs[i]
            if type(value) is scalar_type:
                continue
            got = getattr(value, "dtype", dtype)
            if got is not dtype and got != dtype:
                op = self.op
                raise errors.InternalError(
                    None,
                    op,
                    f"Kernel of {op.type} op '{op.name}' returned {got}, but the op "
                    f"declares {dtype.name}: the kernel and the inference rule disagree.",
                )
        return outputs


_HOST_TYPES = (np.ndarray, np.generic)
# The NumPy scalar types: for a scalar, the checks below do one set lookup, several times
# cheaper than reading its `.size` or `.dtype`.
_SCALAR_TYPES = frozenset(t for t in np.sctypeDict.values() if issubclass(t, np.generic))


def host_value(value: Any) -> Any:
    """A numeric 0-d NumPy array as the NumPy scalar it holds; any other value as it is. The two
    are the same value to every kernel, but arithmetic on scalars skips the ufunc machinery."""
    if type(value) is np.ndarray and value.ndim == 0 and value.dtype.kind in "biufc":
        return value[()]
    return value


def _scalar_type(dtype: np.dtype) -> type | None:
    """The NumPy scalar type whose values have exactly `dtype`, when there is one."""
    return dtype.type if dtype.kind in "biufc" else None


def _all_on_host(inputs: Any) -> bool:
    """Small NumPy values, which a host kernel computes faster than a device dispatch."""
    for x in inputs:
        if (
            type(x) not in _SCALAR_TYPES
            and x is not None
            and (  # None: a group's control input
                not isinstance(x, _HOST_TYPES) or x.size > HOST_MAX_ELEMENTS
            )
        ):
            return False
    return True


def _describe(x: Any) -> str:
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"{x.dtype}{list(x.shape)}"
    return repr(x)


_JITTED: dict[tuple, Any] = {}  # (op type, attrs) -> jitted kernel, shared by all ops alike
_JITTED_CHECKS: dict[tuple, Any] = {}  # (op type, attrs) -> the op's jitted Check.fails


# op -> its kernel with attrs bound, jitted: kept here, not on the op (the IR holds no engine
# state). Tests may put a spy kernel in it for an op.
kernel_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _kernel_for(op: Operation, strings: bool = False):
    """The op's kernel with its attrs bound; jitted unless stateful, and cached both per op and
    across ops with the same type and attrs (so a graph of 100 Adds compiles once). An op on
    string tensors runs its string kernel (NumPy, never jitted)."""
    cached = kernel_cache.get(op)
    if cached is None:
        op_def = op.op_def
        if op_def.kernel is None:
            raise errors.UnimplementedError(None, op, f"Op type {op.type} has no kernel.")
        kernel = registry.get_kernel(op.type, registry.default_device_type())
        if strings:
            cached = functools.partial(registry.string_kernel(op.type), **op.attrs)
        elif op.type == "Const":  # materialised once, not compiled; small ones stay on the host
            value = host_value(op.get_attr("value"))
            if value.size > HOST_MAX_ELEMENTS:
                value = jax.numpy.asarray(value)
            cached = lambda: value  # noqa: E731
        elif op_def.stateful or not op_def.jit:
            cached = functools.partial(kernel, **op.attrs)
        else:
            key = _attrs_key(op)
            cached = _JITTED.get(key) if key is not None else None
            if cached is None:
                cached = jax.jit(functools.partial(kernel, **op.attrs))
                if key is not None:
                    _JITTED[key] = cached
        kernel_cache[op] = cached
    return cached


def _checked(op: Operation, kernel: Any) -> Any:
    """`kernel`, run only after the op's `registry.Check` passes on the same inputs."""
    check = op.op_def.check
    key = _attrs_key(op)
    fails = _JITTED_CHECKS.get(key) if key is not None else None
    if fails is None:
        fails = jax.jit(functools.partial(check.fails, **op.attrs))
        if key is not None:
            _JITTED_CHECKS[key] = fails

    skip = 1 if op.op_def.stateful else 0  # a stateful kernel takes its KernelContext first

    def run(*args: Any) -> Any:
        # a string tensor (an object array) reaches a check only as a TensorArray buffer, whose
        # checks read its shape: they get zeros of that shape, which JAX can take
        failed, detail = fails(*(_shape_only(x) for x in args[skip:]))
        if failed:
            raise errors.InvalidArgumentError(None, op, check.message(op, int(detail)))
        return kernel(*args)

    return run


def _shape_only(x: Any) -> Any:
    if isinstance(x, np.ndarray) and x.dtype == object:
        return np.zeros(x.shape, np.int8)
    return x


def _attrs_key(op: Operation) -> tuple | None:
    """A hashable key for (op type, attrs), or None when an attr (an array) is not hashable."""
    items = []
    for name, value in sorted(op.attrs.items()):
        if isinstance(value, list):
            value = tuple(value)
        try:
            hash(value)
        except TypeError:
            return None
        items.append((name, type(value).__name__, value))
    return (op.type, tuple(items))
