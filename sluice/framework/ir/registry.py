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

    >>> import jax.numpy as jnp
    >>> check = Check(lambda x: (jnp.any(x < 0), jnp.int64(0)), lambda op, _: "x must be >= 0")
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
    op_def = OpDef(name, infer, kernel, stateful=stateful, control_flow=control_flow,
                   jit=jit and not host_inputs and not host_only, host_inputs=tuple(host_inputs),
                   host_only=host_only, check=check, select_safe=select_safe)
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
