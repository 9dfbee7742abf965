"""Core ops: Const, Placeholder, Identity, StopGradient, NoOp; tensor conversion and op wrappers."""

from __future__ import annotations

from typing import Any, Iterable

import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes, string_values
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ops.core.shape_rules import same_as_input


def apply_op(
    op_type: str, inputs: Iterable[Tensor], attrs: dict | None = None, name: str | None = None
) -> Operation:
    """Creates an op of `op_type` in the graph of its inputs (or the default graph)."""
    inputs = list(inputs)
    g = graph_lib.graph_of(inputs)
    return g.create_op(op_type, inputs, attrs, name=name)


@export("convert_to_tensor")
def convert_to_tensor(
    value: Any, dtype: Any = None, name: str | None = None, preferred_dtype: Any = None
) -> Tensor:
    """A Tensor for `value`: Tensors pass through (dtype checked), Variables are read, Python and
    NumPy values become constants."""
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != dtypes.as_dtype(dtype):
            raise TypeError(
                f"Tensor {value.name} has dtype {value.dtype.name}, "
                f"but {dtypes.as_dtype(dtype).name} was requested."
            )
        return value
    if hasattr(value, "_as_tensor"):
        return value._as_tensor(dtype)
    if isinstance(value, Operation):
        raise TypeError(f"Cannot convert Operation {value.name!r} to a Tensor (it has no value).")
    if isinstance(value, (list, tuple)) and holds_tensor(value):
        return _autopack(value, dtype, name or "packed")
    if dtype is None and preferred_dtype is not None:
        try:
            return constant(value, dtype=preferred_dtype, name=name or "Const")
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype, name=name or "Const")


def holds_tensor(value: Any) -> bool:
    """Whether a (nested) list or tuple has a Tensor or Variable anywhere in it."""
    if isinstance(value, (list, tuple)):
        return any(holds_tensor(v) for v in value)
    return isinstance(value, Tensor) or hasattr(value, "_as_tensor")


def _autopack(value: list | tuple, dtype: Any, name: str) -> Tensor:
    """TF1's auto-packing: a (nested) list holding Tensors becomes one Tensor, each level
    stacked along a new first axis; plain entries take the dtype of the Tensors beside them.
    Asked for another `dtype`, the Tensors are cast to it (TF1's `_cast_nested_seqs_to_dtype`)."""
    found = _first_tensor_dtype(value)
    if dtype is None or dtypes.as_dtype(dtype) == found:
        return _pack(value, found, name)
    return _pack(_cast_tensors(value, dtypes.as_dtype(dtype)), dtypes.as_dtype(dtype), name)


def _pack(value: list | tuple, dtype: Any, name: str) -> Tensor:
    entries = [
        _pack(v, dtype, "packed")
        if isinstance(v, (list, tuple)) and holds_tensor(v)
        else convert_to_tensor(v, dtype=dtype)
        for v in value
    ]
    kinds = sorted({t.dtype.name for t in entries})
    if len(kinds) > 1:
        raise TypeError(
            f"Cannot pack a list of tensors of different dtypes {kinds} into one tensor."
        )
    return apply_op("Pack", entries, {"axis": 0, "N": len(entries)}, name=name).outputs[0]


def _cast_tensors(value: Any, dtype: Any) -> Any:
    """`value` with each Tensor (or Variable) in it cast to `dtype`."""
    if isinstance(value, (list, tuple)):
        return [_cast_tensors(v, dtype) for v in value]
    if not (isinstance(value, Tensor) or hasattr(value, "_as_tensor")):
        return value
    t = convert_to_tensor(value)
    if t.dtype == dtype:
        return t
    attrs = {"SrcT": t.dtype, "DstT": dtype, "Truncate": False}
    return apply_op("Cast", [t], attrs, name="Cast").outputs[0]


def _first_tensor_dtype(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        for v in value:
            found = _first_tensor_dtype(v)
            if found is not None:
                return found
        return None
    if isinstance(value, Tensor) or (hasattr(value, "_as_tensor") and hasattr(value, "dtype")):
        return value.dtype
    return None


def convert_n(values: Iterable[Any], dtype: Any = None) -> list[Tensor]:
    """Converts several values to Tensors, giving plain Python values the Tensors' dtype."""
    values = list(values)
    if dtype is None:
        for v in values:
            if isinstance(v, Tensor):
                dtype = v.dtype
                break
            if hasattr(v, "_as_tensor") and hasattr(v, "dtype"):
                dtype = v.dtype
                break
    return [convert_to_tensor(v, dtype=dtype) for v in values]


# -- Const --------------------------------------------------------------------------------------
def _const_infer(op) -> list:
    value = op.get_attr("value")
    return [(value.dtype, TensorShape(value.shape))]


def _const_kernel(*, value, **_):
    return jnp.asarray(value)


register_op("Const", infer=_const_infer, kernel=_const_kernel, select_safe=True)
not_differentiable("Const")


@export("constant")
def constant(
    value: Any,
    dtype: Any = None,
    shape: Any = None,
    name: str = "Const",
    verify_shape: bool = False,
) -> Tensor:
    """A constant tensor (TF1 `tf.constant`): a value, optionally cast and broadcast to `shape`."""
    if isinstance(value, Tensor):
        raise TypeError("sl.constant expects a Python or NumPy value, not a Tensor.")
    if value is None:  # TF1's words; most often a None gradient handed to an op
        raise ValueError("None values not supported.")
    target = dtypes.as_dtype(dtype) if dtype is not None else dtypes.infer_dtype(value)
    if target == dtypes.string and (dtype is not None or _holds_strings(value)):
        array = string_values.as_bytes_array(value)
        return _constant_array(array, target, shape, name, verify_shape)
    array = np.asarray(value)
    if array.dtype.kind in "US":
        raise TypeError(f"Expected {target.name}, got {_short(value)} of type 'str' instead.")
    if array.dtype.kind == "O" and any(v is None for v in array.flat):
        raise TypeError(
            f"Expected {target.name}, got None of type 'NoneType' instead (in {_short(value)})."
        )
    if dtype is None and array.dtype.kind == "O":
        # NumPy's catch-all, not a value TF1 converts (a TensorArray, a ragged list, None)
        raise TypeError(
            f"Failed to convert object of type {type(value).__name__} to Tensor. "
            f"Contents: {_short(value)}. Consider casting elements to a supported "
            "type."
        )
    if array.size and array.dtype.kind == "f" and target.kind in "iub":
        raise TypeError(f"Cannot convert floating value {value!r} to {target.name} in sl.constant.")
    if array.dtype.kind in "iu" and target.kind in "iu":
        info = np.iinfo(target)
        if array.size and (array.min() < info.min or array.max() > info.max):
            raise ValueError(f"Value {value!r} does not fit into {target.name}.")
    return _constant_array(array.astype(target), target, shape, name, verify_shape)


def _holds_strings(value: Any) -> bool:
    """Whether `value` is a string value TF1 converts: NumPy makes a str or bytes array of it
    (a list mixing strings and numbers, whose numbers TF1 then refuses), or an object array
    of str and bytes."""
    try:
        if np.asarray(value).dtype.kind in "US":
            return True
        array = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=object)
    except (TypeError, ValueError):  # a ragged list: not a value TF1 converts
        return False
    return all(isinstance(v, (str, bytes)) for v in array.flat)


def _constant_array(
    array: np.ndarray, target: Any, shape: Any, name: str, verify_shape: bool
) -> Tensor:
    """The Const op of `array` (already of dtype `target`), broadcast to `shape` if given."""
    if shape is not None:
        shape = as_shape(shape).as_list()
        if verify_shape and list(array.shape) != shape:
            raise TypeError(f"Expected constant of shape {shape}, got {list(array.shape)}.")
        if array.size == 1:
            array = np.broadcast_to(array.reshape(()), shape).copy()
        elif array.size == int(np.prod(shape)):
            array = array.reshape(shape)
        else:
            raise ValueError(
                f"sl.constant: {array.size} values cannot fill shape {shape} "
                "(give one value or exactly as many as the shape holds)."
            )
    g = graph_lib.get_default_graph()
    return g.create_op("Const", [], {"value": array, "dtype": target}, name=name).outputs[0]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


# -- Placeholder --------------------------------------------------------------------------------
def _placeholder_infer(op) -> list:
    return [(op.get_attr("dtype"), op.get_attr("shape"))]


def _placeholder_kernel(**attrs):
    raise AssertionError("Placeholders are fed by the session, never run.")


register_op("Placeholder", infer=_placeholder_infer, kernel=_placeholder_kernel)
not_differentiable("Placeholder")


@export("placeholder")
def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> Tensor:
    """A value fed at run time (`feed_dict`); feeds are checked against dtype and shape."""
    g = graph_lib.get_default_graph()
    attrs = {"dtype": dtypes.as_dtype(dtype), "shape": as_shape(shape)}
    return g.create_op("Placeholder", [], attrs, name=name or "Placeholder").outputs[0]


def _placeholder_with_default_infer(op) -> list:
    default = op.inputs[0]
    shape = op.get_attr("shape")
    if not shape.is_compatible_with(default.shape):
        raise ValueError(f"default value of shape {default.shape} does not match shape {shape}")
    return [(default.dtype, shape)]


register_op(
    "PlaceholderWithDefault", infer=_placeholder_with_default_infer, kernel=lambda x, **_: x
)


@register_gradient("PlaceholderWithDefault")
def _placeholder_with_default_grad(op, grad):
    return [grad]


@export("placeholder_with_default")
def placeholder_with_default(input: Any, shape: Any, name: str | None = None) -> Tensor:
    x = convert_to_tensor(input)
    return apply_op("PlaceholderWithDefault", [x], {"shape": as_shape(shape)}, name).outputs[0]


# -- Identity, StopGradient, NoOp ---------------------------------------------------------------
register_op("Identity", infer=same_as_input, kernel=lambda x: x, select_safe=True)


@register_gradient("Identity")
def _identity_grad(op, grad):
    return [grad]


@export("identity")
def identity(input: Any, name: str | None = None) -> Tensor:
    return apply_op("Identity", [convert_to_tensor(input)], name=name).outputs[0]


register_op("StopGradient", infer=same_as_input, kernel=lambda x: x, select_safe=True)
not_differentiable("StopGradient")


@export("stop_gradient")
def stop_gradient(input: Any, name: str | None = None) -> Tensor:
    """The value of `input`, through which no gradient flows."""
    return apply_op("StopGradient", [convert_to_tensor(input)], name=name).outputs[0]


register_op(
    "PreventGradient", infer=same_as_input, kernel=lambda x, message="": x, select_safe=True
)


@register_gradient("PreventGradient")
def _prevent_gradient_grad(op, grad):
    raise LookupError(f"Gradient explicitly disabled. Reason: {op.get_attr('message')}")


@export("python.ops.array_ops.prevent_gradient")
def prevent_gradient(input: Any, message: str = "", name: str | None = None) -> Tensor:
    """The value of `input`; taking a gradient through it raises LookupError naming `message`
    (TF1's `array_ops.prevent_gradient`, for ops whose gradient would be wrong)."""
    attrs = {"message": str(message)}
    return apply_op("PreventGradient", [convert_to_tensor(input)], attrs, name=name).outputs[0]


register_op("NoOp", infer=lambda op: [], kernel=lambda: (), select_safe=True)
not_differentiable("NoOp")


@export("no_op")
def no_op(name: str | None = None) -> Operation:
    return graph_lib.get_default_graph().create_op("NoOp", [], name=name or "NoOp")


@export("group")
def group(*inputs: Any, name: str | None = None) -> Operation:
    """An op that runs after all `inputs` (Tensors or Operations) and outputs nothing."""
    flat: list[Any] = []
    for x in inputs:
        flat.extend(x if isinstance(x, (list, tuple)) else [x])
    ops = [graph_lib.as_operation(x) for x in flat if x is not None]
    g = ops[0].graph if ops else graph_lib.get_default_graph()
    with g.control_dependencies(ops):
        return g.create_op("NoOp", [], name=name or "group_deps")
