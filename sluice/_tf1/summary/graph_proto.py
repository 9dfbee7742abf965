"""A sluice graph as TensorBoard's `GraphDef` protocol buffer, for its graph tab.

One `NodeDef` per op: its name (TensorBoard nests nodes by the "/" of their names, so a while
loop's ops sit in the loop's scope, inner loops inside outer ones), op type, inputs as TF1
writes them ("op" for output 0, "op:i", "^op" for a control input), requested device, and its
attrs: strings, numbers, bools, dtypes, shapes, lists of them, and small constants (a Const's
`value` of at most `MAX_CONSTANT_ELEMENTS` entries; a larger one keeps its dtype and shape
only). With `add_shapes`, `_output_shapes` lists every output's static shape, which TensorBoard
draws on the edges. Attrs of other kinds (a py_func's Python function) are left out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._tf1.summary._protos import protos
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Graph, Operation, Tensor
from sluice.framework.ir.tensor_shape import TensorShape

MAX_CONSTANT_ELEMENTS = 1024
_DTYPE_NAMES = {
    "float32": "DT_FLOAT",
    "float64": "DT_DOUBLE",
    "float16": "DT_HALF",
    "object": "DT_RESOURCE",
}  # sluice's resource dtype (variable handles)


def graph_def(graph: Graph, add_shapes: bool = True) -> Any:
    """`graph` as a TensorBoard `GraphDef` (see the module docstring)."""
    pb = protos("Writing a graph for TensorBoard")
    proto = pb.graph.GraphDef(versions=pb.versions.VersionDef(producer=27))
    for op in graph.get_operations():
        node = proto.node.add(name=op.name, op=op.type, device=op.device)
        node.input.extend(_input_name(t) for t in op.inputs)
        node.input.extend(f"^{c.name}" for c in op.control_inputs)
        for key, value in sorted(op.attrs.items()):
            attr = _attr_value(pb, value)
            if attr is not None:
                node.attr[key].CopyFrom(attr)
        if add_shapes and op.outputs:
            shapes = pb.attr_value.AttrValue.ListValue(
                shape=[_shape(pb, t.shape) for t in op.outputs]
            )
            node.attr["_output_shapes"].CopyFrom(pb.attr_value.AttrValue(list=shapes))
    return proto


def _input_name(t: Tensor) -> str:
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def data_type(pb: Any, dtype: np.dtype) -> int:
    """TF's `DataType` enum value of a NumPy dtype."""
    name = np.dtype(dtype).name
    return pb.types.DataType.Value(_DTYPE_NAMES.get(name, f"DT_{name.upper()}"))


def _shape(pb: Any, shape: TensorShape) -> Any:
    if shape.rank is None:
        return pb.tensor_shape.TensorShapeProto(unknown_rank=True)
    return pb.tensor_shape.TensorShapeProto(
        dim=[pb.tensor_shape.TensorShapeProto.Dim(size=-1 if d is None else d) for d in shape.dims]
    )


def _attr_value(pb: Any, value: Any) -> Any | None:
    """The `AttrValue` of one attr, or None for a kind the proto cannot hold."""
    AttrValue = pb.attr_value.AttrValue
    if isinstance(value, (bool, np.bool_)):
        return AttrValue(b=bool(value))
    if isinstance(value, (int, np.integer)):
        return AttrValue(i=int(value))
    if isinstance(value, (float, np.floating)):
        return AttrValue(f=float(value))
    if isinstance(value, str):
        return AttrValue(s=value.encode("utf-8"))
    if isinstance(value, bytes):
        return AttrValue(s=value)
    if isinstance(value, (np.dtype, dtypes.DType)):
        try:
            return AttrValue(type=data_type(pb, value))
        except ValueError:
            return None
    if isinstance(value, TensorShape):
        return AttrValue(shape=_shape(pb, value))
    if isinstance(value, np.ndarray):
        return _tensor_attr(pb, value)
    if isinstance(value, (list, tuple)):
        return _list_attr(pb, value)
    if isinstance(value, Operation):
        return AttrValue(s=value.name.encode("utf-8"))
    return None


def _list_attr(pb: Any, values: Any) -> Any | None:
    AttrValue = pb.attr_value.AttrValue
    items = [_attr_value(pb, v) for v in values]
    if any(item is None or item.WhichOneof("value") in ("list", "tensor") for item in items):
        return None
    kinds = {item.WhichOneof("value") for item in items}
    if len(kinds) > 1:
        return None
    listed = AttrValue.ListValue()
    if kinds:
        getattr(listed, kinds.pop()).extend(
            getattr(item, item.WhichOneof("value")) for item in items
        )
    return AttrValue(list=listed)


def _tensor_attr(pb: Any, value: np.ndarray) -> Any | None:
    if value.dtype == object:
        return None
    try:
        dtype = data_type(pb, value.dtype)
    except ValueError:
        return None
    tensor = pb.tensor.TensorProto(dtype=dtype, tensor_shape=_shape(pb, TensorShape(value.shape)))
    if value.size <= MAX_CONSTANT_ELEMENTS:
        tensor.tensor_content = (
            np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<"), copy=False).tobytes()
        )
    return pb.attr_value.AttrValue(tensor=tensor)
