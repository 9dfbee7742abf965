"""The op registry: one entry per op type, everything about the op side by side.

An entry holds the op's inference rule (dtype and shape of every output, computed when the op is
built), its kernel (a pure JAX function of the input values and the op's attributes) and its flags.
Gradients are registered per op type next to the op (`register_gradient`), or the op is marked
`not_differentiable`. Kernels may be specialised per device type (`register_kernel`); the default
kernel serves every device.

Kernel contract: `kernel(*inputs, **attrs) -> value | tuple(values)`. A stateful op (variables,
random numbers) gets a `KernelContext` first: `kernel(ctx, *inputs, **attrs)`.
Inference contract: `infer(op) -> [(dtype, shape), ...]`, one pair per output; it raises
`ValueError`/`TypeError` with a message saying what was expected, and the graph adds the op's name,
type and input shapes/dtypes.
Gradient contract: `grad(op, *output_grads) -> [grad or None per input]` (checked by the walk).
Check contract (ops that validate values at run time, like CheckNumerics): `check.fails(*inputs,
**attrs) -> (failed, detail)`, a traceable bool scalar and an int64 scalar; both engines raise
`InvalidArgumentError(op, check.message(op, detail))` when `failed` holds (see `Check`).
Fetch-converter contract (ops whose value means something else on the host, like a summary's
payload, which is a serialized protocol buffer there): `convert(op, value) -> host value`,
applied by the session to a fetched output of the op; registered apart from the op
(`register_fetch_converter`) when the conversion needs libraries the framework does not import.
Lowering contract (the compiled engine): an op is lowered by calling its kernel on traced values,
unless a `LoweringRule` is registered for its type (`register_lowering`, in the compiler's
`rules` modules, as JAX's `mlir.register_lowering(prim, rule)`): `rule(op_context) ->
[(value, liveness) per output]`, for ops the engine implements itself (control flow, stacks) or
computes from what is known while tracing (constants, static shapes).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple

InferFn = Callable[[Any], list]
KernelFn = Callable[..., Any]
GradFn = Callable[..., Any]

NOT_DIFFERENTIABLE = "not_differentiable"


class Check(NamedTuple):
    """A condition an op checks on its inputs when it runs, as TF kernels return an error status.

    `fails(*inputs, **attrs) -> (failed, detail)` is a pure JAX function: a bool scalar and an
    int64 scalar that the message shows (the bad label, which of NaN/Inf). The interpreted engine
    evaluates it before the kernel; the compiled engine returns it from the jitted step, changes
    no variable when it holds, and raises after the call. Either way the error is
    `InvalidArgumentError(None, op, message(op, detail))`.

    >>> import jax.numpy as jnp, numpy as np
    >>> check = Check(lambda x: (jnp.any(x < 0), np.int64(0)), lambda op, _: "x must be >= 0")
    >>> failed, detail = check.fails(jnp.array([1.0, -2.0]))
    >>> bool(failed), check.message(None, int(detail))
    (True, 'x must be >= 0')
    """

    fails: Callable[..., tuple[Any, Any]]
    message: Callable[[Any, int], str]


@dataclasses.dataclass(frozen=True)
class OpDef:
    """An immutable record of one op type."""

    name: str
    infer: InferFn
    kernel: KernelFn | None  # None: the engines implement the op themselves (control flow)
    stateful: bool = False  # reads or writes session state; never folded or deduplicated
    control_flow: bool = False  # one of the whitepaper's primitives
    jit: bool = True  # False for kernels whose output shape depends on input values (Where)
    # Inputs the kernel reads as concrete values (shapes, axes, paddings), as TF keeps them in host
    # memory; negative indices count from the end. A whole-graph compiler needs them static.
    host_inputs: tuple[int, ...] = ()
    # Runs on the host with side effects outside the graph (file I/O): never compiled.
    host_only: bool = False
    check: Check | None = None  # a run-time condition on the inputs (see `Check`)
    # Cheap and defined on every input (no fault, no NaN from a finite input, no state change):
    # the compiled engine may compute it on an untaken cond branch and select (cond_regions).
    select_safe: bool = False


_OPS: dict[str, OpDef] = {}
_GRADIENTS: dict[str, GradFn | str] = {}
_DEVICE_KERNELS: dict[tuple[str, str], KernelFn] = {}
_FETCH_CONVERTERS: dict[str, Callable[[Any, Any], Any]] = {}
_SHAPED_KERNELS: dict[str, Callable[..., Any]] = {}


def register_op(
    name: str,
    *,
    infer: InferFn,
    kernel: KernelFn | None,
    stateful: bool = False,
    control_flow: bool = False,
    jit: bool = True,
    host_inputs: tuple[int, ...] = (),
    host_only: bool = False,
    check: Check | None = None,
    select_safe: bool = False,
) -> OpDef:
    """Registers op type `name`; registering a type twice is an error."""
    if name in _OPS:
        raise KeyError(f"Op type {name!r} is already registered.")
    op_def = OpDef(
        name,
        infer,
        kernel,
        stateful=stateful,
        control_flow=control_flow,
        jit=jit and not host_inputs and not host_only,
        host_inputs=tuple(host_inputs),
        host_only=host_only,
        check=check,
        select_safe=select_safe,
    )
    _OPS[name] = op_def
    return op_def


def get_op_def(name: str) -> OpDef:
    try:
        return _OPS[name]
    except KeyError:
        raise KeyError(f"No op type {name!r} is registered.") from None


def registered_ops() -> dict[str, OpDef]:
    return dict(_OPS)


def register_gradient(op_type: str) -> Callable[[GradFn], GradFn]:
    """Decorator: `@register_gradient("Tanh") def _tanh_grad(op, grad): ...`."""

    def decorate(fn: GradFn) -> GradFn:
        if op_type in _GRADIENTS:
            raise KeyError(f"A gradient for op type {op_type!r} is already registered.")
        _GRADIENTS[op_type] = fn
        return fn

    return decorate


def not_differentiable(*op_types: str) -> None:
    """Marks op types whose outputs carry no gradient (comparisons, shapes, random draws)."""
    for op_type in op_types:
        if op_type in _GRADIENTS:
            raise KeyError(f"A gradient for op type {op_type!r} is already registered.")
        _GRADIENTS[op_type] = NOT_DIFFERENTIABLE


def get_gradient(op_type: str) -> GradFn | str | None:
    """The gradient function, `NOT_DIFFERENTIABLE`, or None when nothing was registered."""
    return _GRADIENTS.get(op_type)


def register_kernel(op_type: str, device_type: str, kernel: KernelFn) -> None:
    """A kernel specialised for one device type ("cpu", "gpu", "tpu")."""
    get_op_def(op_type)
    _DEVICE_KERNELS[(op_type, device_type.lower())] = kernel


def specialised_kernel(op_type: str, device_type: str) -> KernelFn | None:
    """The kernel registered for exactly this device type, or None."""
    return _DEVICE_KERNELS.get((op_type, device_type.lower()))


def register_fetch_converter(op_type: str, convert: Callable[[Any, Any], Any]) -> None:
    """`convert(op, numpy value)` makes what `Session.run` returns for an output of `op_type`."""
    get_op_def(op_type)
    _FETCH_CONVERTERS[op_type] = convert


def fetch_converter(op_type: str) -> Callable[[Any, Any], Any] | None:
    return _FETCH_CONVERTERS.get(op_type)


def register_shaped_kernel(op_type: str, kernel: Callable[..., Any]) -> None:
    """`kernel(op, *inputs, **attrs)`, which may read `op`'s static output shapes, for the
    compiled engine when the op's kernel needs a host value that is traced there
    (`HostValueRequired`): a StridedSlice whose begin comes from the run, cut to the length
    that `set_shape` fixed. It returns None when it cannot do better either."""
    get_op_def(op_type)
    _SHAPED_KERNELS[op_type] = kernel


def shaped_kernel(op_type: str) -> Callable[..., Any] | None:
    return _SHAPED_KERNELS.get(op_type)


# ops whose output is their input 0 passed on unchanged (Merge: any of its inputs, for output 0)
_FORWARDING_OPS = frozenset(
    ["Identity", "StopGradient", "Snapshot", "Switch", "Merge", "Enter", "Exit", "NextIteration"]
)


def fetch_converter_for(tensor: Any) -> tuple[Callable[[Any, Any], Any], Any] | None:
    """(convert, source op) for a fetched tensor: its op's converter, or, for a value that ops
    pass on unchanged (an identity, a cond's Switch and Merge, a while loop's Enter and Exit),
    the converter of the ops it can come from, when they all have the same. A summary a cond
    returns is still a serialized proto when fetched, as in TF1."""
    sources, seen, todo = [], set(), [tensor]
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        seen.add(t)
        op = t.op
        if op.type in _FETCH_CONVERTERS:
            sources.append(op)
        elif op.type == "Merge" and t.value_index == 0:
            todo.extend(op.inputs)
        elif op.type in _FORWARDING_OPS and op.type != "Merge" and op.inputs:
            todo.append(op.inputs[0])
        else:
            return None
    converters = {_FETCH_CONVERTERS[op.type] for op in sources}
    return (converters.pop(), sources[0]) if len(converters) == 1 else None


class LoweringRule(NamedTuple):
    """How the compiled engine lowers one op type instead of calling its kernel.

    `lower(op_context) -> [(value, liveness), ...]`, one pair per output, where `op_context`
    is the compiler's `rules.context.OpContext` (the op, its inputs' values and liveness, the op's
    liveness, the trace context). With `dead_inputs` the rule is called whatever the liveness
    of the op's inputs and computes its outputs' liveness itself (Switch, Merge, stacks); without
    it the op is live when called, and a dead op's outputs are dead without calling it.
    """

    lower: Callable[[Any], list]
    dead_inputs: bool = False


_LOWERINGS: dict[str, LoweringRule] = {}


def register_lowering(
    op_type: str, lower: Callable[[Any], list], *, dead_inputs: bool = False
) -> None:
    """The compiled engine lowers `op_type` with `lower` (see `LoweringRule`), not its kernel;
    registering a type twice is an error."""
    if op_type in _LOWERINGS:
        raise KeyError(f"A lowering for op type {op_type!r} is already registered.")
    _LOWERINGS[op_type] = LoweringRule(lower, dead_inputs)


def lowering_rule(op_type: str) -> LoweringRule | None:
    """The rule registered for `op_type`, or None: the op's kernel lowers it."""
    return _LOWERINGS.get(op_type)


def registered_lowerings() -> dict[str, LoweringRule]:
    return dict(_LOWERINGS)


def default_device_type() -> str:
    """The device type kernels are chosen for: the platform JAX computes on."""
    import jax

    return jax.default_backend()


def get_kernel(op_type: str, device_type: str | None = None) -> KernelFn | None:
    if device_type is not None:
        special = _DEVICE_KERNELS.get((op_type, device_type.lower()))
        if special is not None:
            return special
    return get_op_def(op_type).kernel


# -- string kernels ------------------------------------------------------------------------------
# TF registers a kernel per device and per dtype (REGISTER_KERNEL_BUILDER with a TypeConstraint).
# A string tensor's values are NumPy object arrays of bytes, which JAX cannot hold, so an op that
# takes or makes one runs its *string kernel*: NumPy on the host, same contract as `kernel`. Such
# an op can be built only when it has one (or is a control-flow primitive, whose values the
# engines pass through); the compiled engine hands its graph to the interpreted one.
_STRING_KERNELS: dict[str, KernelFn] = {}


def register_string_kernel(op_type: str, kernel: KernelFn) -> None:
    """`kernel(*inputs, **attrs)` (NumPy) runs `op_type` when a string tensor is involved."""
    get_op_def(op_type)
    if op_type in _STRING_KERNELS:
        raise KeyError(f"A string kernel for op type {op_type!r} is already registered.")
    _STRING_KERNELS[op_type] = kernel


def string_kernel(op_type: str) -> KernelFn | None:
    return _STRING_KERNELS.get(op_type)


def string_op_types() -> frozenset[str]:
    """The op types that have a string kernel."""
    return frozenset(_STRING_KERNELS)
