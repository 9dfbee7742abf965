"""TF1's `tensorflow.python.ops.gen_data_flow_ops`: the raw TensorArray read, as TF1's
TensorArray tests call it to read with a dtype of their choosing, and the gradient array with
a shape prepended to its elements (`from sluice.python.ops import gen_data_flow_ops` once
`tensorflow` is renamed).

A sluice TensorArray is a value whose handle is its flow, so `handle` and `flow_in` are the
same tensor (`ta.handle`, `ta.flow`). A read with another dtype than the array's fails when it
runs, with TF1's message, as TF1's kernel does (the graph is built, as in TF1).

>>> from sluice.python.ops import gen_data_flow_ops
>>> ta = sl.TensorArray(sl.float32, size=1).write(0, [1.0, 2.0])
>>> out = gen_data_flow_ops.tensor_array_read_v3(ta.handle, 0, ta.flow, sl.float32)
>>> sl.Session().run(out).tolist()
[1.0, 2.0]
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.control_flow.tensor_array import TensorArray, grad_with_shape
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.state import tensor_array_ops as ta_ops

_MODULE = "python.ops.gen_data_flow_ops"

# TF1's DataTypeString, where it differs from the NumPy name
_TF_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def _tf_name(dtype: Any) -> str:
    return _TF_NAMES.get(dtype.name, dtype.name)


@export(f"{_MODULE}.tensor_array_read_v3")
def tensor_array_read_v3(
    handle: Any, index: Any, flow_in: Any, dtype: Any, name: str | None = None
) -> Tensor:
    """Element `index` of the array whose flow is `flow_in` (TF1's TensorArrayReadV3).

    Raises:
      InvalidArgumentError: (when run) `dtype` is not the array's dtype, or the read fails as
        `TensorArray.read` does.
    """
    flow = core_ops.convert_to_tensor(flow_in)
    dtype = dtypes.as_dtype(dtype)
    if flow.dtype == dtype:
        return TensorArray(dtype, handle=handle, flow=flow).read(index, name=name)
    message = (
        f"TensorArray dtype is {_tf_name(flow.dtype)} but Op requested dtype {_tf_name(dtype)}."
    )
    failing = ta_ops.error(flow, message)
    value = TensorArray(flow.dtype, flow=failing).read(index, name=name)
    return fill_ops.cast(value, dtype)


@export(f"{_MODULE}.tensor_array_grad_with_shape")
def tensor_array_grad_with_shape(
    handle: Any, flow_in: Any, shape_to_prepend: Any, source: str, name: str | None = None
) -> tuple[Tensor, Tensor]:
    """The gradient array for `source` of the array whose flow is `flow_in`, its elements
    `shape_to_prepend` + the array's element shape (TF1's TensorArrayGradWithShape): returns
    (handle, flow) of the gradient array, one tensor twice, to wrap as
    `sl.TensorArray(dtype, handle=handle, flow=flow)`.

    The prepended dims are unknown while building (as TF1's shape function has them) and
    checked when a write runs: a write of another shape fails then. An array of unknown
    element shape gives a gradient array of unknown element shape. As `TensorArray.grad`, one
    `source` gives one gradient array (the first call's `shape_to_prepend` stays).

    >>> from sluice.python.ops import gen_data_flow_ops
    >>> ta = sl.TensorArray(sl.float32, size=2, element_shape=[3])
    >>> h, f = gen_data_flow_ops.tensor_array_grad_with_shape(ta.handle, ta.flow, [2], "g")
    >>> g = sl.TensorArray(sl.float32, handle=h, flow=f)
    >>> g.read(0).shape.as_list()
    [None, 3]
    >>> sl.Session().run(g.read(0)).shape
    (2, 3)
    """
    flow = core_ops.convert_to_tensor(flow_in)
    array = TensorArray(flow.dtype, handle=handle, flow=flow)
    grad = grad_with_shape(array, source, shape_to_prepend, name)
    return grad.handle, grad.flow
