"""TF1's `function.Defun`: a Python function with declared input dtypes that becomes a graph
function, called like an op.

sluice has no function-call op: a call is *inlined*. Calling a defined function runs the Python
function again on the call's inputs, in the caller's graph, under a name scope named after the
function, and passes its results through one IdentityN op named as TF1 names the call op
(`name`, else the function's name). Both engines then run the body as ordinary ops, and
`gradients` differentiates through it, which is TF1's SymbolicGradient of the body. A function
with a `grad_func` (a Defun taking the inputs and one gradient per output) or a
`python_grad_func` (`fn(op, *output_grads)`, as a registered gradient) gets that gradient
instead: its IdentityN (outputs + inputs) has its gradient overridden, as `custom_gradient`
does, so the body receives none.

As in TF1, every op of the body runs when the call runs: the stateful ops the body builds for
their effect (an `assign_add` it does not return) become control inputs of the call's op.

The *definition* (signature, captured tensors, and the name with a hash of the body when no
`func_name` is given) is traced once, when first asked for, in the default graph with
placeholders for the arguments; that trace stays in the graph unused, as TF1's function
library keeps a body apart from its calls.

Semantics, as plain Python::

    @Defun(sl.float32, sl.float32)
    def f(x, b):
        return x * x + b

    f(x, b)  ==  identity_n([x * x + b])   # under name scope "f", as one call op "f"

>>> from sluice.python.framework import function
>>> @function.Defun(sl.float32)
... def Twice(x):
...     return 2.0 * x
>>> x = sl.constant(3.0)
>>> value, grad = sl.Session().run([Twice(x), sl.gradients(Twice(x), x)[0]])
>>> print(value, grad)
6.0 2.0
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import re
from typing import Any, Callable, NamedTuple

import numpy as np

from sluice._export import export
from sluice.framework.autodiff.custom_gradient import RegisterGradient
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ops.array.fill_ops import zeros_like
from sluice.framework.ops.array.identity_n_ops import identity_n
from sluice.framework.ops.core.core_ops import convert_to_tensor, identity, no_op, placeholder

_gradient_ids = itertools.count()
_LIBRARY = "tf1_function_library"  # Graph.attachments key: function name -> defined function


class ArgDef(NamedTuple):
    """One argument or result of a function's signature (TF1's `OpDef.ArgDef`)."""

    name: str
    type: dtypes.DType


class Signature(NamedTuple):
    """A function's signature (TF1's `OpDef`): its name, arguments and results."""

    name: str
    input_arg: list[ArgDef]
    output_arg: list[ArgDef]
    description: str


class FunctionDef(NamedTuple):
    """What TF1's `FunctionDef` tells of a defined function: its signature and the types of
    the ops of its body (sluice keeps the body as the Python function; see the module note)."""

    signature: Signature
    node_types: list[str]


class Traced(NamedTuple):
    """One run of the Python function: its results and the ops it built."""

    inputs: list[Tensor]  # the arguments as the body sees them
    outputs: list[Tensor]
    body_ops: list[Operation]
    captured: list[Tensor]  # tensors from before the call that the body uses


def _positional_names(func: Callable) -> tuple[list[str], bool]:
    """The names of `func`'s positional parameters and whether it takes *args; ValueError for
    defaults or keyword parameters, which TF1's Defun refuses."""
    params = list(inspect.signature(func).parameters.values())
    names, varargs = [], False
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            varargs = True
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            names.append(p.name)
        else:
            raise ValueError(
                f"Defun: function {getattr(func, '__name__', func)!r} has argument defaults or "
                "keyword arguments, which functions do not support."
            )
    return names, varargs


def _scope_name(name: str) -> str:
    """`name` as a valid name scope: other characters become "_", leading "_" go."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", name).lstrip("_-.") or "function"


def _python_name(func: Callable) -> str:
    if inspect.ismethod(func):
        owner = func.__self__
        owner = owner if inspect.isclass(owner) else type(owner)
        return f"{owner.__name__}.{func.__name__}"
    return getattr(func, "__name__", type(func).__name__)


@export("python.framework.function.Defun")
class Defun:
    """Decorator making a Python function a graph function (TF1's `function.Defun`).

    Args:
      *input_types: the dtype of each argument. With none, a function of no arguments is
        defined now, and one with arguments takes the dtypes of its first call's inputs (one
        definition per list of dtypes).
      func_name: the function's name (default: the Python name and a hash of the body).
      grad_func: a defined function giving the gradient: called with the inputs and one
        gradient per output, it returns one gradient per input.
      python_grad_func: `fn(op, *output_grads)` giving the gradient, as a registered gradient
        function does; `op.inputs` are the call's inputs and `op.outputs` its results.
      out_names: names of the results in the signature.
      shape_func: `fn(op)` returning a shape per result, set on the call's results.
      **kwargs: attributes of every call: `noinline` (sluice always inlines; kept for TF1).

    Raises:
      ValueError: the function takes defaults or keyword arguments, or the number of dtypes
        does not fit its arguments.
    """

    def __init__(self, *input_types: Any, **kwargs: Any):
        self._input_types = input_types
        self._options = dict(kwargs)

    def __call__(self, func: Callable) -> "_DefinedFunction | _OverloadedFunction":
        if not callable(func):
            raise ValueError(f"Defun: func {func!r} must be callable.")
        names, varargs = _positional_names(func)
        if self._input_types:
            n = len(self._input_types)
            if n < len(names) or (n > len(names) and not varargs):
                raise ValueError(
                    f"Defun: {_python_name(func)!r} takes {len(names)} arguments"
                    f"{' or more' if varargs else ''}, but {n} input types were given."
                )
            return _DefinedFunction(func, names, self._input_types, **self._options)
        if not names and not varargs:
            return _DefinedFunction(func, [], [], **self._options)
        return _OverloadedFunction(func, names, **self._options)


_DEFUN_OPTIONS = ("func_name", "grad_func", "python_grad_func", "out_names", "shape_func")
_CALL_ATTRS = ("noinline",)


class _DefinedFunction:
    """A function with fixed input dtypes: what `Defun(...)(func)` returns (TF1's
    `_DefinedFunction`). Calling it inlines the body (see the module note)."""

    def __init__(
        self,
        func: Callable,
        argnames: list[str],
        input_types: Any,
        func_name: str | None = None,
        grad_func: "_DefinedFunction | None" = None,
        python_grad_func: Callable | None = None,
        out_names: list[str] | None = None,
        shape_func: Callable | None = None,
        **kwargs: Any,
    ):
        unknown = sorted(set(kwargs) - set(_CALL_ATTRS))
        if unknown:
            raise ValueError(f"Defun: unknown keyword arguments {unknown}.")
        if grad_func is not None and not isinstance(grad_func, _DefinedFunction):
            raise ValueError(f"Defun: grad_func must be a defined function, got {grad_func!r}.")
        self._func = func
        self._input_types = tuple(dtypes.as_dtype(t) for t in input_types)
        self._argnames = [
            argnames[i] if i < len(argnames) else f"arg{i}" for i in range(len(input_types))
        ]
        self._func_name = func_name
        self._grad_func = grad_func
        self._python_grad_func = python_grad_func
        self._out_names = list(out_names) if out_names is not None else None
        self._shape_func = shape_func
        self._call_attrs = dict(kwargs)
        self._definition: FunctionDef | None = None
        self._captured: list[Tensor] = []

    # -- what TF1 code asks of a defined function ------------------------------------------------
    @property
    def declared_input_types(self) -> tuple[dtypes.DType, ...]:
        return self._input_types

    @property
    def name(self) -> str:
        """The function's name: `func_name`, else the Python name and a hash of the body."""
        if self._func_name:
            return self._func_name
        return self.definition.signature.name

    @property
    def definition(self) -> FunctionDef:
        """The signature and body op types, traced once in the default graph."""
        if self._definition is None:
            self._definition = self._define(graph_lib.get_default_graph())
        return self._definition

    @property
    def captured_inputs(self) -> list[Tensor]:
        """Tensors from outside that the body uses (TF1 passes them as extra arguments)."""
        self.definition
        return list(self._captured)

    @property
    def grad_func_name(self) -> str | None:
        return self._grad_func.name if self._grad_func is not None else None

    @property
    def python_grad_func(self) -> Callable | None:
        return self._python_grad_func

    @property
    def python_func(self) -> Callable:
        return self._func

    def add_to_graph(self, g: graph_lib.Graph) -> None:
        """Lists the function (and its gradient function) in `g`'s function library.

        Raises:
          ValueError: both `grad_func` and `python_grad_func` are given ("Gradient defined
            twice"), as TF1's `Graph._add_function`.
        """
        if self._grad_func is not None and self._python_grad_func is not None:
            raise ValueError(
                f"Gradient defined twice for function {self._func_name or _python_name(self._func)}"
            )
        library = g.attachments.setdefault(_LIBRARY, [])
        if self not in library:
            library.append(self)
        if self._grad_func is not None:
            self._grad_func.add_to_graph(g)

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor | tuple[Tensor, ...] | Operation:
        """Calls the function on `args` (one per declared input): its result, a tuple of
        results, or the call's Operation when the function returns nothing."""
        name = kwargs.pop("name", None)
        unknown = sorted(set(kwargs) - set(_CALL_ATTRS))
        if unknown:
            raise ValueError(f"Unknown keyword arguments: {unknown}.")
        outputs, op = self.call(list(args), name=name)
        if not outputs:
            return op
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    # -- calls ------------------------------------------------------------------------------------
    def call(self, args: list, name: str | None = None, device: Any = None) -> tuple[list, Any]:
        """Inlines one call: (results, the call's op). The functional ops call this."""
        return self.call_traced(args, name=name, device=device)[1:]

    def call_traced(
        self, args: list, name: str | None = None, device: Any = None
    ) -> tuple[Traced, list[Tensor], Operation]:
        """Inlines one call: (the trace, results, the call's op)."""
        if len(args) != len(self._input_types):
            raise ValueError(
                f"Expected number of arguments: {len(self._input_types)}, received: {len(args)} "
                f"(function {self._func_name or _python_name(self._func)!r})."
            )
        inputs = [convert_to_tensor(a, dtype=t) for a, t in zip(args, self._input_types)]
        g = graph_lib.graph_of(inputs)
        self.add_to_graph(g)
        scope_name = name or _scope_name(self._func_name or _python_name(self._func))
        with g.as_default(), g.name_scope(scope_name) as scope:
            traced = self._trace(g, inputs)
            outputs, op = self._emit_call(g, traced, scope)
        if self._shape_func is not None:
            shapes = self._shape_func(_CallOp(op, traced.inputs, outputs, self))
            if len(shapes) != len(outputs):
                raise ValueError(
                    f"shape_func produced {len(shapes)} shapes for {len(outputs)} outputs."
                )
            for t, shape in zip(outputs, shapes):
                t.set_shape(shape)
        return traced, outputs, op

    def _trace(self, g: graph_lib.Graph, inputs: list[Tensor]) -> Traced:
        body_inputs = [identity(x, name=n) for x, n in zip(inputs, self._argnames)]
        first_id = g.last_op_id
        returned = self._func(*body_inputs)
        outputs = self._results(returned)
        body_ops = [op for op in g.get_operations() if op.id > first_id]
        known = {id(op) for op in body_ops}
        seen = {id(t) for t in body_inputs}
        captured = []
        for op in body_ops:
            for t in op.inputs:
                if id(t.op) not in known and id(t) not in seen:
                    seen.add(id(t))
                    captured.append(t)
        return Traced(body_inputs, outputs, body_ops, captured)

    def _results(self, returned: Any) -> list[Tensor]:
        # TF1: returning None means no results; None among the results is an error
        if returned is None:
            return []
        returned = list(returned) if isinstance(returned, (list, tuple)) else [returned]
        if any(r is None for r in returned):
            raise ValueError(
                f"Function {self._func_name or _python_name(self._func)} can not return None."
            )
        return [convert_to_tensor(r) for r in returned]

    def _emit_call(self, g: graph_lib.Graph, traced: Traced, scope: str) -> tuple[list, Any]:
        """The call's op, named as the scope, running after the body's stateful sinks."""
        ctx = g.control_flow_context
        used = {id(t.op) for op in traced.body_ops for t in op.inputs}
        used |= {id(c) for op in traced.body_ops for c in op.control_inputs}
        used |= {id(t.op) for t in traced.outputs}
        sinks = [
            op
            for op in traced.body_ops
            if id(op) not in used and op.op_def.stateful and op.control_flow_context is ctx
        ]
        with g.control_dependencies(sinks):
            if not traced.outputs:
                return [], no_op(name=scope)
            if self._grad_func is None and self._python_grad_func is None:
                outs = identity_n(traced.outputs, name=scope)
                return list(outs), outs[0].op
            gradient_name = self._register_gradient(len(traced.outputs), len(traced.inputs))
            with g.gradient_override_map({"IdentityN": gradient_name}):
                outs = identity_n(traced.outputs + traced.inputs, name=scope)
            return list(outs[: len(traced.outputs)]), outs[0].op

    def _register_gradient(self, n_out: int, n_in: int) -> str:
        """Registers the gradient of a call's IdentityN(outputs + inputs): the user's gradient
        for the inputs, none for the body."""

        def call_gradient(op: Operation, *grads: Any) -> list:
            out_grads = [
                zeros_like(t) if gr is None else gr for t, gr in zip(op.inputs[:n_out], grads)
            ]
            inputs = list(op.inputs[n_out:])
            if self._python_grad_func is not None:
                view = _CallOp(op, inputs, list(op.outputs[:n_out]), self)
                in_grads = self._python_grad_func(view, *out_grads)
            else:
                in_grads = self._grad_func(*inputs, *out_grads)
            in_grads = list(in_grads) if isinstance(in_grads, (list, tuple)) else [in_grads]
            if len(in_grads) != n_in:
                raise ValueError(
                    f"The gradient of function {self.name!r} returned {len(in_grads)} "
                    f"gradients for its {n_in} inputs."
                )
            return [None] * n_out + in_grads

        name = f"DefunGradient-{next(_gradient_ids)}"
        RegisterGradient(name)(call_gradient)
        return name

    # -- the definition ---------------------------------------------------------------------------
    def _define(self, g: graph_lib.Graph) -> FunctionDef:
        """Traces the body once on placeholders, outside any control-flow context."""
        with (
            g.as_default(),
            g.in_control_flow_context(None),
            g.control_dependencies(None),
            g.name_scope(f"{_scope_name(_python_name(self._func))}_definition"),
        ):
            args = [placeholder(t, name=n) for t, n in zip(self._input_types, self._argnames)]
            traced = self._trace(g, args)
        self._captured = traced.captured
        name = self._func_name or f"{_python_name(self._func)}_{_body_hash(traced)}"
        out_names = self._out_names or [f"output_{i}" for i in range(len(traced.outputs))]
        if len(out_names) != len(traced.outputs):
            raise ValueError(
                f"Defun {name!r}: out_names has {len(out_names)} names for "
                f"{len(traced.outputs)} results."
            )
        signature = Signature(
            name,
            [ArgDef(n, t) for n, t in zip(self._argnames, self._input_types)]
            + [ArgDef(f"captured_{i}", t.dtype) for i, t in enumerate(traced.captured)],
            [ArgDef(n, t.dtype) for n, t in zip(out_names, traced.outputs)],
            inspect.getdoc(self._func) or "",
        )
        return FunctionDef(signature, [op.type for op in traced.body_ops])


def _body_hash(traced: Traced) -> str:
    """8 hex digits of a hash of the body: op types, wiring and attributes (TF1 hashes the
    FunctionDef), so equal bodies get equal names."""
    index = {id(op): i for i, op in enumerate(traced.body_ops)}
    hasher = hashlib.sha1()
    for op in traced.body_ops:
        wiring = [(index.get(id(t.op), -1), t.value_index, t.dtype.name) for t in op.inputs]
        hasher.update(f"{op.type}|{wiring}".encode())
        for key in sorted(op.attrs):
            value = op.attrs[key]
            data = np.asarray(value).tobytes() if isinstance(value, np.ndarray) else repr(value)
            hasher.update(f"{key}={data!r}".encode())
    return hasher.hexdigest()[:8]


class _CallOp:
    """A call as a gradient or shape function sees it (TF1 passes the call op): `inputs` are
    the function's inputs, `outputs` its results, `name`/`graph`/`get_attr` the op's."""

    def __init__(self, op: Operation, inputs: list, outputs: list, function: _DefinedFunction):
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.op = op
        self.function = function

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def type(self) -> str:
        return self.function.name

    @property
    def graph(self) -> graph_lib.Graph:
        return self.op.graph

    def get_attr(self, name: str) -> Any:
        return self.op.get_attr(name)


class _OverloadedFunction:
    """A Defun without input types (TF1's `_OverloadedFunction`): each call defines the
    function for its inputs' dtypes, once per list of dtypes."""

    def __init__(self, func: Callable, argnames: list[str], **options: Any):
        self._func = func
        self._argnames = argnames
        self._options = options
        self._instances: dict[tuple, _DefinedFunction] = {}

    def instantiate(self, input_types: list) -> _DefinedFunction:
        key = tuple(dtypes.as_dtype(t) for t in input_types)
        if key not in self._instances:
            options = dict(self._options)
            if options.get("func_name"):
                options["func_name"] = f"{options['func_name']}_{'_'.join(t.name for t in key)}"
            self._instances[key] = _DefinedFunction(self._func, self._argnames, key, **options)
        return self._instances[key]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        inputs = [convert_to_tensor(a) for a in args]
        return self.instantiate([t.dtype for t in inputs])(*inputs, **kwargs)


def library_functions(g: graph_lib.Graph) -> list[_DefinedFunction]:
    """The defined functions called or added in `g`, in the order they were added."""
    return list(g.attachments.get(_LIBRARY, []))


def as_defined(f: Any, input_types: list | None = None) -> _DefinedFunction:
    """`f` as a defined function: an overloaded one instantiated for `input_types`."""
    if isinstance(f, _OverloadedFunction):
        if input_types is None:
            raise TypeError("A Defun without input types needs its inputs' dtypes here.")
        return f.instantiate(input_types)
    if not isinstance(f, _DefinedFunction):
        raise TypeError(f"Expected a function defined with Defun, got {f!r}.")
    return f
