"""`TensorArray` (TF1's tf.TensorArray): a write-once array of same-shaped tensors.

The array is a value, its `flow`: a dense buffer [size, *element_shape] (see `tensor_array_ops`).
`write`, `scatter`, `unstack` and `split` return a NEW TensorArray over the new buffer; as in TF1,
use the returned one from then on. A TensorArray is a loop variable of `while_loop` and a result
of `cond` like a tensor (its buffer is passed, and a TensorArray rebuilt on the other side).

Semantics, as plain Python over a list::

    ta = [zeros(element_shape)] * size        # TensorArray(dtype, size)
    ta[i] = value                             # ta = ta.write(i, value)
    ta[i]                                     # ta.read(i)
    stack(ta)                                 # ta.stack()

Differences from TF1: every element has the same shape (a dense buffer; TF1 allows differing
shapes when infer_shape=False), so `split` takes equal lengths only; `clear_after_read` is
accepted but reads never clear (reading twice is allowed); a write twice to one index is an
error at graph construction when both indices are constants, and not detected otherwise.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.control_flow.structure import constant_int
from sluice.framework.ir import dtypes, errors
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.graph import name_scope as _name_scope
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.state import tensor_array_ops as ta_ops


class _ArrayInfo:
    """What all the values of one array share: dtype, element shape (refined by writes), flags,
    and the creation op to tell the element shape (None for an array wrapped from a flow)."""

    def __init__(
        self,
        dtype: Any,
        element_shape: TensorShape,
        dynamic_size: bool,
        infer_shape: bool,
        name: str,
        creation: Operation | None,
        static_size: int | None = None,
    ):
        self.dtype = dtype
        self.static_size = static_size  # the size when known while building (not dynamic)
        self.element_shape = element_shape
        self.dynamic_size = dynamic_size
        self.infer_shape = infer_shape
        self.name = name
        self.creation = creation

    def merge_element_shape(self, shape: TensorShape) -> None:
        if not self.element_shape.is_compatible_with(shape):
            hint = (
                ""
                if self.infer_shape
                else " (sluice keeps a TensorArray's elements in one dense buffer, so they must "
                "share one shape even with infer_shape=False)"
            )
            raise ValueError(
                f"Inconsistent shapes for TensorArray {self.name}: saw {shape} but expected "
                f"{self.element_shape} (and infer_shape=True){hint}"
            )
        merged = self.element_shape.merge_with(shape)
        if merged != self.element_shape:
            self.element_shape = merged
            if self.creation is not None:
                self.creation.set_attr("element_shape", merged)


# The array each flow tensor belongs to, so `TensorArray(dtype, handle=..., flow=...)` can wrap
# a flow again (TF1 code rebuilds arrays from their flows).
# Kept per graph, in its `attachments` (freed with it: an array's ops refer to the graph).
_INFO_OF_FLOW = "tensor_array.info_of_flow"


def _infos(flow: Any) -> dict:
    return flow.graph.attachments.setdefault(_INFO_OF_FLOW, {})


@export("TensorArray")
class TensorArray:
    """A write-once array of tensors of one dtype and shape, for loops (TF1's tf.TensorArray).

    Args:
      dtype: the elements' dtype.
      size: int32 scalar (a Python int or a Tensor): the number of elements.
      dynamic_size: when True, writes past the end grow the array. A compiled loop cannot grow
        one, so a loop writing to it runs interpreted (the session says so once).
      clear_after_read: accepted for TF1 compatibility; reads never clear here.
      tensor_array_name: the array's name (for messages).
      handle, flow: wrap an existing array's flow (`ta.flow`); `handle` is accepted and must be
        the same array's `handle` or None.
      infer_shape: check that every write has the shape of the first.
      element_shape: the elements' (maybe partial) shape, if known before the first write.
      colocate_with_first_write_call: accepted for TF1 compatibility.
      name: name scope of the ops.

    Raises:
      ValueError: a missing size, or arguments TF1 does not allow together.

    >>> ta = sl.TensorArray(sl.float32, size=3)
    >>> ta = ta.write(0, 1.0).write(1, 2.0).write(2, 3.0)
    >>> print(sl.Session().run(ta.stack()))
    [1. 2. 3.]
    """

    def __init__(
        self,
        dtype: Any,
        size: Any = None,
        dynamic_size: bool | None = None,
        clear_after_read: bool | None = None,
        tensor_array_name: str | None = None,
        handle: Any = None,
        flow: Any = None,
        infer_shape: bool = True,
        element_shape: Any = None,
        colocate_with_first_write_call: bool = True,
        name: str | None = None,
    ):
        if handle is not None and tensor_array_name:
            raise ValueError("Cannot construct with both handle and tensor_array_name")
        if handle is not None and not isinstance(handle, Tensor):
            raise TypeError("Handle must be a Tensor")
        if handle is None and flow is None and size is None:
            raise ValueError("Size must be provided if handle is not provided")
        if (handle is not None or flow is not None) and size is not None:
            raise ValueError("Cannot provide both a handle and size at the same time")
        if (handle is not None or flow is not None) and element_shape is not None:
            raise ValueError("Cannot provide both a handle and element_shape at the same time")
        if (handle is not None or flow is not None) and dynamic_size is not None:
            raise ValueError("Cannot provide both a handle and dynamic_size at the same time")
        if (handle is not None or flow is not None) and clear_after_read is not None:
            raise ValueError("Cannot provide both a handle and clear_after_read at the same time")
        dtype = dtypes.as_dtype(dtype)
        self._written: frozenset = frozenset()
        if handle is not None or flow is not None:
            flow = core_ops.convert_to_tensor(flow if flow is not None else handle)
            if handle is not None and handle is not flow:
                raise ValueError(
                    "A sluice TensorArray's handle is its flow: pass the same "
                    "array's `flow` (its `handle` is the same tensor)."
                )
            if flow.dtype != dtype:
                raise TypeError(f"The flow has dtype {flow.dtype.name}, not {dtype.name}")
            info = _infos(flow).get(flow)
            if info is None:
                element = flow.shape[1:] if flow.shape.rank is not None else TensorShape(None)
                info = _ArrayInfo(dtype, element, False, infer_shape, flow.op.name, None)
            self._info, self._flow = info, flow
            _infos(flow)[flow] = info
            return
        element = as_shape(element_shape) if element_shape is not None else TensorShape(None)
        with _name_scope(name, "TensorArray") as scope:
            array_name = tensor_array_name or scope.rstrip("/") or "TensorArray"
            buffer = ta_ops.create(size, dtype, element, bool(dynamic_size), array_name)
        static_size = None if dynamic_size else constant_int(buffer.op.inputs[0])
        self._info = _ArrayInfo(
            dtype, element, bool(dynamic_size), infer_shape, array_name, buffer.op, static_size
        )
        self._set_flow(buffer)

    # -- the value ---------------------------------------------------------------------------
    def _set_flow(self, flow: Tensor) -> None:
        self._flow = flow
        _infos(flow)[flow] = self._info

    def _with_flow(self, flow: Tensor, written: frozenset = frozenset()) -> TensorArray:
        out = TensorArray.__new__(TensorArray)
        out._info, out._written = self._info, written
        out._set_flow(flow)
        return out

    @property
    def flow(self) -> Tensor:
        """The array's value: its buffer [size, *element_shape]."""
        return self._flow

    @property
    def handle(self) -> Tensor:
        """The same tensor as `flow` (the array is a value; there is no resource)."""
        return self._flow

    @property
    def dtype(self) -> Any:
        return self._info.dtype

    @property
    def element_shape(self) -> TensorShape:
        """The elements' shape as far as it is known (from element_shape= and the writes)."""
        return self._info.element_shape

    @property
    def dynamic_size(self) -> bool:
        return self._info.dynamic_size

    def __repr__(self) -> str:
        return (
            f"<sl.TensorArray '{self._info.name}' dtype={self.dtype.name} "
            f"element_shape={self.element_shape}>"
        )

    # -- writes ------------------------------------------------------------------------------
    def _value(self, value: Any) -> Tensor:
        if isinstance(value, Tensor):
            tensor = value
        else:
            tensor = core_ops.convert_to_tensor(value, preferred_dtype=self.dtype, name="value")
        if tensor.dtype != self.dtype:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"TensorArray {self._info.name}: TensorArray dtype is {self.dtype.name} but Op "
                f"is trying to write dtype {tensor.dtype.name}.",
            )
        return tensor

    def write(self, index: Any, value: Any, name: str | None = None) -> TensorArray:
        """A new TensorArray with element `index` set to `value`.

        Raises:
          InvalidArgumentError: another dtype (at construction), an index out of range or
            written before (at run time; at construction when both indices are constants).
          ValueError: a shape unlike the other elements'.
        """
        with _name_scope(name, "TensorArrayWrite", [self._flow]):
            index = core_ops.convert_to_tensor(index, dtype=dtypes.int32)
            value = self._value(value)
            self._info.merge_element_shape(value.shape)
            known = constant_int(index)
            if known is not None and known in self._written:
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"TensorArray {self._info.name}: Could not write to TensorArray index "
                    f"{known} because it has already been written to.",
                )
            flow = ta_ops.write(self._flow, index, value, self.dynamic_size)
        written = self._written | {known} if known is not None else self._written
        return self._with_flow(flow, written)

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> TensorArray:
        """A new TensorArray with element `indices[k]` set to `value[k]`."""
        with _name_scope(name, "TensorArrayScatter", [self._flow]):
            indices = core_ops.convert_to_tensor(indices, dtype=dtypes.int32)
            value = self._value(value)
            if value.shape.rank is not None and value.shape.rank >= 1:
                self._info.merge_element_shape(value.shape[1:])
            flow = ta_ops.scatter(self._flow, indices, value, self.dynamic_size)
        return self._with_flow(flow)

    def unstack(self, value: Any, name: str | None = None) -> TensorArray:
        """A new TensorArray whose element i is `value[i]` (TF1: a scatter to 0..n-1)."""
        with _name_scope(name, "TensorArrayUnstack", [self._flow]):
            value = self._value(value)
            if value.shape.rank == 0:
                raise ValueError(
                    f"TensorArray {self._info.name}: cannot unstack a scalar "
                    f"({value.name}); the value needs rank >= 1"
                )
            n = value.shape[0] if value.shape.rank is not None else None
            count = n if n is not None else fill_ops.shape(value)[0]
            return self.scatter(fill_ops.range(count), value)

    def split(self, value: Any, lengths: Any, name: str | None = None) -> TensorArray:
        """A new TensorArray whose elements are consecutive pieces of `value` along axis 0, of
        the given `lengths` (all equal here: the elements share one shape)."""
        with _name_scope(name, "TensorArraySplit", [self._flow]):
            value = self._value(value)
            known = [constant_int(x) for x in _as_list(lengths)]
            if not known or None in known or len(set(known)) != 1:
                raise ValueError(
                    f"TensorArray {self._info.name}: split needs lengths that are equal Python "
                    f"ints (the elements share one shape), got {lengths!r}"
                )
            length, count = known[0], len(known)
            if value.shape.rank is None or value.shape.rank == 0:
                raise ValueError(
                    f"TensorArray {self._info.name}: split needs a value of known "
                    f"rank >= 1, got shape {value.shape}"
                )
            if value.shape[0] is not None and value.shape[0] != length * count:
                raise ValueError(
                    f"TensorArray {self._info.name}: the lengths sum to {length * count}, but "
                    f"the value has {value.shape[0]} rows"
                )
            from sluice.framework.ops.array import array_ops

            pieces = array_ops.reshape(
                value,
                [count, length] + value.shape[1:].as_list()
                if value.shape[1:].is_fully_defined()
                else _pieces_shape(value, count, length),
            )
            return self.scatter(fill_ops.range(count), pieces)

    # -- reads -------------------------------------------------------------------------------
    def read(self, index: Any, name: str | None = None) -> Tensor:
        """Element `index` (zeros if it was never written and its shape is fully known)."""
        with _name_scope(name, "TensorArrayRead", [self._flow]):
            index = core_ops.convert_to_tensor(index, dtype=dtypes.int32)
            return ta_ops.read(self._flow, index, self.element_shape)

    def gather(self, indices: Any, name: str | None = None) -> Tensor:
        """The elements at `indices`, stacked: [len(indices), *element_shape]."""
        with _name_scope(name, "TensorArrayGather", [self._flow]):
            indices = core_ops.convert_to_tensor(indices, dtype=dtypes.int32)
            return ta_ops.gather(self._flow, indices, self.element_shape)

    def stack(self, name: str | None = None) -> Tensor:
        """All elements stacked: [size, *element_shape]."""
        with _name_scope(name, "TensorArrayStack", [self._flow]):
            stacked = ta_ops.stack(self._flow, self.element_shape)
            if self.element_shape.rank is not None:
                stacked.set_shape(
                    TensorShape([self._info.static_size]).concatenate(self.element_shape)
                )
            return stacked

    def concat(self, name: str | None = None) -> Tensor:
        """All elements concatenated along their first axis."""
        with _name_scope(name, "TensorArrayConcat", [self._flow]):
            return ta_ops.concat(self._flow, self.element_shape)

    def size(self, name: str | None = None) -> Tensor:
        """The number of elements, an int32 scalar (for dynamic_size: highest written + 1)."""
        rows = self._info.static_size
        with _name_scope(name, "TensorArraySize", [self._flow]):
            if rows is not None:
                return core_ops.constant(rows, dtype=dtypes.int32)
            return ta_ops.size(self._flow)

    # -- other -------------------------------------------------------------------------------
    def identity(self) -> TensorArray:
        """A TensorArray over an Identity of the flow (ops that must run before it)."""
        return self._with_flow(core_ops.identity(self._flow), self._written)

    def close(self, name: str | None = None) -> Operation:
        """An op that does nothing (a value needs no closing), ordered after the array."""
        g = self._flow.graph
        with g.control_dependencies([self._flow.op]):
            return core_ops.apply_op("NoOp", [], name=name or "TensorArrayClose")

    def grad(self, source: str, flow: Any = None, name: str | None = None) -> Any:
        raise NotImplementedError(
            "TensorArray.grad is TF1's internal gradient plumbing; sluice differentiates "
            "TensorArray ops with sl.gradients directly."
        )


def _as_list(lengths: Any) -> list:
    if isinstance(lengths, Tensor):
        n = lengths.shape[0] if lengths.shape.rank == 1 else None
        if n is None:
            return []
        from sluice.framework.ops.core.shape_rules import constant_value

        value = constant_value(lengths)
        return [] if value is None else [core_ops.constant(int(v)) for v in value]
    return [core_ops.constant(int(x)) if not isinstance(x, Tensor) else x for x in lengths]


def _pieces_shape(value: Tensor, count: int, length: int) -> Tensor:
    from sluice.framework.ops.array import join_ops

    rest = fill_ops.shape(value)[1:]
    return join_ops.concat([core_ops.constant([count, length]), rest], 0)


# -- passing arrays through while_loop and cond ---------------------------------------------------
def is_tensor_array(x: Any) -> bool:
    return isinstance(x, TensorArray)


def flows_of(values: list) -> list:
    """Each TensorArray replaced by its flow; other values as they are."""
    return [v.flow if isinstance(v, TensorArray) else v for v in values]


def rebuild_like(templates: list, tensors: list) -> list:
    """`tensors`, each one whose template is a TensorArray made a TensorArray over it again (a
    loop's Merge or Exit, a cond's Merge: no write there is known to be done)."""
    return [
        t._with_flow(x) if isinstance(t, TensorArray) else x for t, x in zip(templates, tensors)
    ]


def require_same_kinds(templates: list, values: list, where: str) -> None:
    """TypeError when a TensorArray comes back as something else, or the other way round."""
    for i, (t, v) in enumerate(zip(templates, values)):
        if isinstance(t, TensorArray) != isinstance(v, TensorArray):
            kind = "a TensorArray" if isinstance(t, TensorArray) else "not a TensorArray"
            raise TypeError(f"{where}: value {i} is {kind} on one side but {v!r} on the other.")
