"""User-defined gradients: `custom_gradient`, `RegisterGradient`, `NotDifferentiable`, and the
lookup that honours `Graph.gradient_override_map`.

Gradients live in one registry keyed by name (`registry.register_gradient`): an op type's own
gradient is registered under the type, and `RegisterGradient("Name")` adds one under any other
name. An op built inside `graph.gradient_override_map({"Square": "Name"})` records "Name" as its
`_gradient_op_type`, and the gradient walk asks `gradient_function(op)`, which looks that name
up first. A name nothing was registered under leaves the op without a gradient, so the walk
raises LookupError when it reaches it (as TF1 does).

`custom_gradient` is built the same way as in TF1's graph mode: `f` builds `y`; then one
IdentityN op passes `y`, the inputs and a read of each variable `f` used through, with its
gradient overridden by a function registered under a fresh name that calls the user's
`grad_fn`. The ops `f` built get no gradient (IdentityN gives none to `y`'s producers), the
inputs get `grad_fn`'s. Being an ordinary gradient function, `grad_fn` builds its ops in the
backward context of wherever `f` was called: a while loop's backward loop, a cond branch's
gradient branch.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import logging
from typing import Any, Callable

import jax

from sluice._export import export
from sluice.framework.ir import dtypes, registry
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ops.array.identity_n_ops import identity_n
from sluice.framework.ops.core.core_ops import convert_to_tensor
from sluice.framework.ops.math.indexed_slices import IndexedSlices

_logger = logging.getLogger("sluice")
_custom_ids = itertools.count()


def gradient_function(op: Operation) -> Callable | str | None:
    """The gradient of `op`: the one registered under its `gradient_override_map` name if it was
    built under one, else its type's; `registry.NOT_DIFFERENTIABLE`, or None when there is none."""
    try:
        name = op.get_attr("_gradient_op_type")
    except ValueError:
        name = op.type
    return registry.get_gradient(name)


@export("RegisterGradient")
class RegisterGradient:
    """Decorator registering a gradient function under a name (TF1's `tf.RegisterGradient`).

    The function takes `(op, *output_grads)` and returns one gradient (or None) per input of
    `op`. Registering a name twice raises KeyError. The name is an op type's, for an op type
    without a gradient, or any other name for `Graph.gradient_override_map`.

    >>> @sl.RegisterGradient("DoctestClipGrad")
    ... def _clip_grad(op, grad):
    ...     return sl.maximum(sl.minimum(grad, 0.1), -0.1)
    >>> x = sl.constant(3.0)
    >>> with sl.get_default_graph().gradient_override_map({"Identity": "DoctestClipGrad"}):
    ...     y = sl.identity(x)
    >>> print(sl.Session().run(sl.gradients(10.0 * y, x)[0]))
    0.1
    """

    def __init__(self, op_type: str):
        if not isinstance(op_type, str):
            raise TypeError(f"op_type must be a string, got {op_type!r}.")
        self._op_type = op_type

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def checked(op: Operation, *grads: Any) -> Any:
            in_grads = fn(op, *grads)
            _require_input_shapes(op, in_grads, f"The gradient registered as {self._op_type!r}")
            return in_grads

        registry.register_gradient(self._op_type)(checked)
        return fn


def _require_input_shapes(op: Operation, in_grads: Any, who: str) -> None:
    """ValueError when a user's gradient has a static shape unlike its input's (TF1 sets each
    gradient's shape to its input's, which raises then); the walk checks counts and dtypes."""
    in_grads = in_grads if isinstance(in_grads, (list, tuple)) else [in_grads]
    for t, gr in zip(op.inputs, in_grads):
        if gr is None or t.dtype == dtypes.resource or isinstance(gr, IndexedSlices):
            continue
        shape = convert_to_tensor(gr).shape
        if not shape.is_compatible_with(t.shape):
            raise ValueError(
                f"{who} returned a gradient of shape {shape} for input {t.name} "
                f"of {op.type} op '{op.name}', which has shape {t.shape}."
            )


@export("NotDifferentiable", "no_gradient")
def NotDifferentiable(op_type: str) -> None:  # noqa: N802 (TF1's name)
    """Marks `op_type` as having no gradient: `gradients` gives None through it, never an error
    (TF1's `tf.NotDifferentiable`, also `tf.no_gradient`). KeyError if it has a gradient."""
    if not isinstance(op_type, str):
        raise TypeError(f"op_type must be a string, got {op_type!r}.")
    registry.not_differentiable(op_type)


no_gradient = NotDifferentiable


# -- custom_gradient ----------------------------------------------------------------------------
def _is_leaf(x: Any) -> bool:
    return x is None or isinstance(x, Tensor) or hasattr(x, "_as_tensor")


def _flatten(structure: Any) -> list:
    return jax.tree_util.tree_leaves(structure, is_leaf=_is_leaf)


def _pack_as(structure: Any, flat: list) -> Any:
    treedef = jax.tree_util.tree_structure(structure, is_leaf=_is_leaf)
    return jax.tree_util.tree_unflatten(treedef, flat)


def _variable_of(handle_op: Operation) -> Any:
    """The Variable object whose handle op is `handle_op` (found in the graph's collections);
    the handle Tensor itself for a variable kept in no collection."""
    g = handle_op.graph
    for key in g.get_all_collection_keys():
        for item in g.get_collection(key):
            handle = getattr(item, "handle", None)
            if isinstance(handle, Tensor) and handle.op is handle_op:
                return item
    return handle_op.outputs[0]


def _handle_op(t: Tensor) -> Operation:
    """The VarHandleOp behind a handle that may have been captured into loops and branches."""
    op = t.op
    while op.type != "VarHandleOp" and op.inputs:
        op = op.inputs[0].op
    return op


def _variables_read_after(g: graph_lib.Graph, first_id: int) -> list[Operation]:
    """The handle ops of the variables that ops built after op `first_id` read, in order."""
    found: list[Operation] = []
    new_ops = itertools.takewhile(lambda op: op.id > first_id, reversed(g.get_operations()))
    for op in reversed(list(new_ops)):  # ops are listed in the order they were built
        if op.type == "ReadVariableOp":
            handle_op = _handle_op(op.inputs[0])
            if handle_op.type == "VarHandleOp" and handle_op not in found:
                found.append(handle_op)
    return found


def _accepts_variables(grad_fn: Callable) -> bool:
    params = inspect.signature(grad_fn).parameters.values()
    return any(p.name == "variables" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


@export("custom_gradient")
def custom_gradient(f: Callable) -> Callable:
    """Decorator giving `f` a gradient of its own (TF1's `tf.custom_gradient`, graph mode).

    `f(*xs)` returns `(y, grad_fn)`: `y` a Tensor or a nested structure of Tensors, and
    `grad_fn(*dys)` the gradients of the xs (one per x, None for none) given one gradient per
    leaf of `y`. When `f` reads variables, `grad_fn` must accept `variables=` (the Variables
    read) and return `(grads_of_xs, grads_of_variables)`. As in TF1's graph mode, `f` takes its
    inputs positionally.

    Args:
      f: the function; its arguments are converted to Tensors.

    Returns:
      A function computing `y` whose gradient is `grad_fn`'s.

    Raises:
      ValueError: keyword arguments are given, or `grad_fn` returns a wrong number of
        gradients (when `gradients` reaches it).
      TypeError: `f` reads variables and `grad_fn` has no `variables` argument.

    >>> @sl.custom_gradient
    ... def log1pexp(x):
    ...     e = sl.exp(x)
    ...     def grad(dy):
    ...         return dy * (1.0 - 1.0 / (1.0 + e))
    ...     return sl.log(1.0 + e), grad
    >>> x = sl.constant(100.0)
    >>> print(sl.Session().run(sl.gradients(log1pexp(x), x)[0]))  # exp(100) overflows: not NaN
    1.0
    """

    @functools.wraps(f)
    def decorated(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise ValueError(
                f"custom_gradient function {f.__name__!r} was called with keyword arguments "
                f"{sorted(kwargs)}; in graph mode (TF1) it takes its inputs positionally."
            )
        return _build(f, args)

    return decorated


def _build(f: Callable, args: tuple, warn_unused_variables: bool = True) -> Any:
    inputs = [convert_to_tensor(x) for x in args]
    g = graph_lib.graph_of(inputs) if inputs else graph_lib.get_default_graph()
    first_id = g.last_op_id
    returned = f(*inputs)
    if not (isinstance(returned, (tuple, list)) and len(returned) == 2 and callable(returned[1])):
        raise TypeError(
            f"custom_gradient function {f.__name__!r} must return a pair (y, "
            f"grad_fn) with grad_fn a function, got {returned!r}."
        )
    result, grad_fn = returned
    handle_ops = _variables_read_after(g, first_id)
    variables = [_variable_of(op) for op in handle_ops]
    with_variables = _accepts_variables(grad_fn)
    if variables and not with_variables:
        raise TypeError(
            f"custom_gradient function {f.__name__!r} reads the variables "
            f"{[op.name for op in handle_ops]}: its grad_fn must accept a keyword argument "
            "'variables' and return (input gradients, variable gradients)."
        )
    if with_variables and not variables and warn_unused_variables:
        _logger.warning(
            "sluice: @custom_gradient grad_fn of %r has 'variables' in its "
            "signature, but %r read no variable.",
            f.__name__,
            f.__name__,
        )
    flat_result = [convert_to_tensor(t) for t in _flatten(result)]
    n_out = len(flat_result)

    def grad_of_identity_n(op: Operation, *grads: Any) -> list:
        result_grads = grads[:n_out]
        if variables:
            input_grads, variable_grads = grad_fn(*result_grads, variables=variables)
            variable_grads = list(variable_grads)
            if len(variable_grads) != len(variables):
                raise ValueError(
                    f"custom_gradient {f.__name__!r}: grad_fn must return a gradient for each "
                    f"variable: {len(variable_grads)} for {len(variables)} variables."
                )
        else:
            input_grads, variable_grads = grad_fn(*result_grads), []
        input_grads = _flatten(input_grads)
        if len(input_grads) != len(inputs):
            raise ValueError(
                f"custom_gradient {f.__name__!r}: grad_fn returned {len(input_grads)} "
                f"gradients for {len(inputs)} inputs."
            )
        in_grads = [None] * n_out + input_grads + variable_grads
        _require_input_shapes(op, in_grads, f"custom_gradient {f.__name__!r}: grad_fn")
        return in_grads

    name = f"CustomGradient-{next(_custom_ids)}"
    registry.register_gradient(name)(grad_of_identity_n)
    # A read of each variable carries its gradient to the handle (TF1 passes the handle).
    reads = [
        g.create_op(
            "ReadVariableOp",
            [op.outputs[0]],
            {"dtype": op.get_attr("dtype"), "shape": op.get_attr("shape")},
            name="ReadVariableOp",
        ).outputs[0]
        for op in handle_ops
    ]
    with g.gradient_override_map({"IdentityN": name}):
        outputs = identity_n(flat_result + inputs + reads)
    return _pack_as(result, outputs[:n_out])


__all__ = [
    "NotDifferentiable",
    "RegisterGradient",
    "custom_gradient",
    "gradient_function",
    "no_gradient",
]


@export("python.ops.custom_gradient.get_dependent_variables")
def get_dependent_variables(input_ops: Any, output_ops: Any) -> list:
    """The variables the subgraph between `input_ops` and `output_ops` reads (TF1's
    `custom_gradient.get_dependent_variables`, which `recompute_grad`-style code uses to pass
    `variables=` to a gradient function).

    Walks back from `output_ops` (tensors or ops, nested) along data inputs, not past the
    tensors of `input_ops` nor past an op with no gradient, and returns the trainable
    Variables whose handle ops it reaches, in the order reached (as TF1's walk with
    `only_differentiable=True`).

    >>> v = sl.Variable(2.0, name="v")
    >>> x = sl.constant(1.0)
    >>> [w.op.name for w in get_dependent_variables([x], [x * v])]
    ['v']
    """
    flat_inputs = [t for t in _flatten(input_ops) if t is not None]
    stop = {id(t) for t in flat_inputs if isinstance(t, Tensor)}
    seeds = []
    for t in _flatten(output_ops):
        if isinstance(t, Operation):
            seeds.append(t)
        elif t is not None:
            t = convert_to_tensor(t)
            if id(t) not in stop:  # an output that is an input reads nothing between them
                seeds.append(t.op)
    seen: set[int] = set()
    handles: list[Operation] = []
    stack = list(reversed(seeds))
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if op.type == "VarHandleOp":
            handles.append(op)
        if not _is_differentiable(op):  # TF1 walks only through differentiable ops
            continue
        for t in reversed(op.inputs):
            if id(t) not in stop:
                stack.append(t.op)
    if not handles:
        return []
    g = handles[0].graph
    by_name = {v.op.name: v for v in g.get_collection(graph_lib.GraphKeys.TRAINABLE_VARIABLES)}
    return [by_name[op.name] for op in handles if op.name in by_name]


def _is_differentiable(op: Operation) -> bool:
    gradient = gradient_function(op)
    return gradient is not None and gradient != registry.NOT_DIFFERENTIABLE


def _flatten(structure: Any) -> list:
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in _flatten(item)]
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in _flatten(structure[key])]
    return [structure]
