"""`TensorArray` (TF1's tf.TensorArray): a write-once array of tensors, for loops.

Semantics, as plain Python over a list::

    ta = [None] * size                        # TensorArray(dtype, size)
    ta[i] = value                             # ta = ta.write(i, value): once per index
    ta[i]                                     # ta.read(i): zeros if unwritten and shape known
    stack(ta), concatenate(ta)                # ta.stack(), ta.concat()

`write`, `scatter`, `unstack` and `split` return a NEW TensorArray; as in TF1, use the returned
one from then on. A TensorArray is a loop variable of `while_loop` and a result of `cond` like a
tensor. An array is kept in one of two ways:

- **A dense buffer** (the fast path, which `dynamic_rnn` and `map_fn` use): the array's `flow`
  IS a tensor [size, *element_shape] (see `ops.state.tensor_array_ops`); every op takes the buffer
  and returns a new one, so the array passes through loops and conds as an ordinary value, and
  both engines run it as any op (the compiled one updates rows in place in a lax loop).
- **A list known while the graph is built** (`tensor_array_list`), when the elements differ in
  shape: writes of different shapes with `infer_shape=False` (or a partly unknown
  element_shape), or a `split` with unequal lengths. Every write must then use a constant index
  outside a loop, so each element is a tensor known while building: a read is that element,
  `concat` a ConcatV2 of them, `stack` a Pack. Both engines run these ordinary ops (the
  compiled one inside its one jit), and their gradients are the ops' own. An array switches from
  dense to a list at the first write of another shape (its earlier constant-index writes are
  recorded for that). A list cannot be a loop variable or a cond result, and an element of
  another shape written at a run-time index (in a loop) has no list to go to: both raise an
  error naming the array and the op. We chose this over a padded buffer with per-element
  lengths because a read of such an element has a shape known only at run time, which one jit
  cannot return; TF1 programs with ragged elements (split/concat of sequences, tests) use
  constant indices.

Errors come as TF1 raises them: a second write to one index (both indices constants), a split
whose lengths do not fit, an index out of range: InvalidArgumentError when the op runs; a wrong
dtype or (with infer_shape) a wrong shape while building. `clear_after_read=True` (the default):
a read of an index that was read before fails when it runs. An array here is a value, not a
resource, so "before" means: an earlier read of the same array value, or of an array it was
written from when that read is ordered before by `control_dependencies`, in the same loop frame
or cond branch. The check op runs the earlier read first (TF1 fails only when both run in one
step). Reads at different constant indices need no check, so the fast path has none.

A gradient array (`ta.grad(source)`) adds up its writes to one index, as TF1's does; every
value of one array gives the same gradient array for one source (TF1's one resource per source),
and `gen_data_flow_ops.tensor_array_grad_with_shape` makes one whose elements have dims
prepended (their sizes known when it runs). TF1 code may write through one copy of an array and
read through another, ordering the read after the write with `control_dependencies`: a read
(read, gather, stack, concat) of a value sees the later values of the same array written from it
whose ops are among the control dependencies open where the read is built (in the same loop
frame or branch), as a read of TF1's resource would; other writes are not seen by other values.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.control_flow import tensor_array_list as lists
from sluice.framework.control_flow.structure import constant_int
from sluice.framework.ir import dtypes, errors
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.graph import name_scope as _name_scope
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.state import tensor_array_ops as ta_ops


class _ArrayInfo:
    """What all the values of one array share: dtype, element shape (refined by writes when
    infer_shape), flags, the creation op to tell the element shape (None for an array wrapped
    from a flow) and the gradient arrays made by `grad`."""

    def __init__(
        self,
        dtype: Any,
        element_shape: TensorShape,
        dynamic_size: bool,
        infer_shape: bool,
        name: str,
        creation: Operation | None,
        static_size: int | None = None,
        clear_after_read: bool = True,
        aggregate: bool = False,
    ):
        self.dtype = dtype
        self.static_size = static_size  # the size when known while building (not dynamic)
        self.initial_size = (  # the size given, when a constant (also for dynamic_size)
            constant_int(creation.inputs[0]) if creation is not None else static_size
        )
        self.element_shape = element_shape
        self.dynamic_size = dynamic_size
        self.infer_shape = infer_shape
        self.name = name
        self.creation = creation
        self.clear_after_read = clear_after_read
        self.aggregate = aggregate  # writes to one index add up (a gradient array)
        self.grads: dict[str, _ArrayInfo] = {}
        graph = creation.graph if creation is not None else None
        count = graph.attachments.setdefault(_COUNT, [0]) if graph is not None else [0]
        self.label = f"{name}_{count[0]}"  # as TF1's kernels name an array in their messages
        count[0] += 1

    def check_element_shape(self, shape: TensorShape) -> None:
        """ValueError when `shape` does not fit the element shape; with infer_shape, the element
        shape is refined by it (and told to the creation op)."""
        if not self.element_shape.is_compatible_with(shape):
            raise ValueError(
                f"Inconsistent shapes for TensorArray {self.name}: saw {shape} but expected "
                f"{self.element_shape} (and infer_shape={self.infer_shape})"
            )
        if not self.infer_shape:
            return
        merged = self.element_shape.merge_with(shape)
        if merged != self.element_shape:
            self.element_shape = merged
            if self.creation is not None:
                self.creation.set_attr("element_shape", merged)


# Per graph, in its `attachments` (freed with it): the array each flow tensor belongs to, so
# `TensorArray(dtype, handle=..., flow=...)` can wrap a flow again (TF1 code rebuilds arrays from
# their flows), and a counter for the arrays' labels.
_VALUE_OF_FLOW = "tensor_array.value_of_flow"
_COUNT = "tensor_array.count"


def _values(flow: Any) -> dict:
    return flow.graph.attachments.setdefault(_VALUE_OF_FLOW, {})


def _shape_text(shape: TensorShape) -> str:
    if shape.rank is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.dims) + "]"


@export("TensorArray")
class TensorArray:
    """A write-once array of tensors of one dtype, for loops (TF1's tf.TensorArray).

    Args:
      dtype: the elements' dtype.
      size: int32 scalar (a Python int or a Tensor): the number of elements.
      dynamic_size: when True, writes past the end grow the array. A compiled loop cannot grow
        one, so a loop writing to it runs interpreted (the session says so once).
      clear_after_read: when True (the default), an element can be read once: a second read of
        it fails when it runs (InvalidArgumentError), as in TF1 (see the module docstring).
      tensor_array_name: the array's name (for messages).
      handle, flow: wrap an existing array's flow (`ta.flow`); `handle` is accepted and must be
        the same array's `handle` or None.
      infer_shape: check that every write has the shape of the first. When False, elements may
        differ in shape (see the module docstring for how such an array is kept).
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
        self._init_state()
        if handle is not None or flow is not None:
            flow = core_ops.convert_to_tensor(flow if flow is not None else handle)
            if handle is not None and handle is not flow:
                raise ValueError(
                    "A sluice TensorArray's handle is its flow: pass the same "
                    "array's `flow` (its `handle` is the same tensor)."
                )
            known = _values(flow).get(flow)
            if known is not None:
                if known.dtype != dtype:
                    raise TypeError(f"The array has dtype {known.dtype.name}, not {dtype.name}")
                self._copy_from(known)
                return
            if flow.dtype != dtype:
                raise TypeError(f"The flow has dtype {flow.dtype.name}, not {dtype.name}")
            element = flow.shape[1:] if flow.shape.rank is not None else TensorShape(None)
            self._info = _ArrayInfo(dtype, element, False, infer_shape, flow.op.name, None)
            self._elements = None
            self._set_flow(flow)
            return
        element = as_shape(element_shape) if element_shape is not None else TensorShape(None)
        with _name_scope(name, "TensorArray") as scope:
            array_name = tensor_array_name or scope.rstrip("/") or "TensorArray"
            buffer = ta_ops.create(size, dtype, element, bool(dynamic_size), array_name)
        self._start(buffer, dtype, element, dynamic_size, clear_after_read, infer_shape)

    def _start(
        self,
        buffer: Tensor,
        dtype: Any,
        element: TensorShape,
        dynamic_size: Any,
        clear_after_read: Any,
        infer_shape: bool,
    ) -> None:
        """The state of a new array whose creation op made `buffer`."""
        array_name = buffer.op.get_attr("tensor_array_name")
        static_size = None if dynamic_size else constant_int(buffer.op.inputs[0])
        self._info = _ArrayInfo(
            dtype,
            element,
            bool(dynamic_size),
            infer_shape,
            array_name,
            buffer.op,
            static_size,
            clear_after_read=clear_after_read is None or bool(clear_after_read),
        )
        self._set_flow(buffer)

    # -- the value ---------------------------------------------------------------------------
    def _init_state(self) -> None:
        self._written: frozenset = frozenset()  # constant indices written (dense)
        self._elements: dict | None = {}  # index -> element while all writes are constant
        self._listed = False  # kept as a list (elements of different shapes)
        self._reads: tuple = ()  # (control-flow context, index, read op) for clear_after_read
        self._parent: TensorArray | None = None  # the value this one was written from

    def _copy_from(self, other: TensorArray) -> None:
        self._info, self._flow, self._written = other._info, other._flow, other._written
        self._elements, self._listed, self._reads = other._elements, other._listed, other._reads
        self._parent = other._parent

    def _set_flow(self, flow: Tensor) -> None:
        self._flow = flow
        _values(flow)[flow] = self

    def _with_flow(
        self,
        flow: Tensor,
        written: frozenset = frozenset(),
        elements: dict | None = None,
        listed: bool = False,
    ) -> TensorArray:
        out = TensorArray.__new__(TensorArray)
        out._info, out._written = self._info, written
        out._elements, out._listed, out._reads = elements, listed, self._reads
        out._parent = self
        out._set_flow(flow)
        return out

    def _ordered_latest(self) -> TensorArray:
        """This value, or the latest value of the same array written from it whose op the
        ops being built run after (`control_dependencies`, in the same loop frame or branch):
        a read there sees those writes, as a read of TF1's array (a resource) does."""
        g = self._flow.graph
        ctx = g.control_flow_context
        latest = self
        for op in g.current_control_dependencies():
            if not op.outputs or op.control_flow_context is not ctx:
                continue
            value = _values(op.outputs[0]).get(op.outputs[0])
            if value is None or value._info is not self._info or value._flow is latest._flow:
                continue
            ancestor = value._parent
            while ancestor is not None and ancestor._flow is not latest._flow:
                ancestor = ancestor._parent
            if ancestor is not None:
                latest = value
        return latest

    @property
    def flow(self) -> Tensor:
        """The array's value: its buffer [size, *element_shape] (for a list, a scalar computed
        after its elements)."""
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
        elif isinstance(value, (str, bytes)) and self.dtype != dtypes.string:
            # as TF1's conversion to the array's dtype says
            raise TypeError(
                f"Expected {self.dtype.name}, got {value!r} of type '{type(value).__name__}' "
                "instead."
            )
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

    def _dense_element(self) -> TensorShape:
        """The element shape as the array and its buffer's static shape know it."""
        rows = self._flow.shape[1:] if self._flow.shape.rank is not None else TensorShape(None)
        if rows.is_compatible_with(self.element_shape):
            return rows.merge_with(self.element_shape)
        return self.element_shape

    def _fits(self, shape: TensorShape) -> bool:
        """True when an element of `shape` fits the dense buffer's rows."""
        if self._flow.shape.rank is None:
            return True
        return self._flow.shape[1:].is_compatible_with(shape)

    def _write_failure(self, known: int | None, shape: TensorShape) -> str | None:
        """TF1's run-time error for a write to constant index `known`, or None."""
        label = self._info.label
        if known is None:
            return None
        size = self._list_size() if self._listed else self._info.static_size
        if known < 0 or (size is not None and not self.dynamic_size and known >= size):
            return (
                f"TensorArray {label}: Tried to write to index {known} but array is not "
                f"resizeable and size is: {size}"
            )
        if known not in self._written and not (self._elements and known in self._elements):
            return None
        if not self._info.aggregate:
            return (
                f"TensorArray {label}: Could not write to TensorArray index {known} because "
                "it has already been written to."
            )
        before = lists.shape_of(self._elements[known]) if self._elements else None
        if before is not None and not before.is_compatible_with(shape):
            return (
                f"TensorArray {label}: Could not aggregate to TensorArray index {known} because "
                f"the existing shape is {_shape_text(before)} but the new input shape is "
                f"{_shape_text(shape)}."
            )
        return None

    def _elements_after(self, writes: dict) -> dict | None:
        """The recorded elements after constant-index `writes` (None: unknown)."""
        if self._elements is None:
            return None
        out = dict(self._elements)
        for k, v in writes.items():
            if self._info.aggregate and k in out:
                before = lists.tensor_of(out[k])
                if before.shape.is_compatible_with(lists.shape_of(v)):
                    v = core_ops.apply_op("AddV2", [before, lists.tensor_of(v)]).outputs[0]
            out[k] = v
        return out

    def _as_list(self, writes: dict, inputs: list, failure: str | None, op: str) -> TensorArray:
        """A list-kept array: the recorded elements, then `writes` {index: element}."""
        elements = self._elements_after(writes)
        if elements is None:
            raise ValueError(
                f"TensorArray {self._info.name}: {op} of an element of another shape than the "
                f"array's buffer holds ({_shape_text(self._flow.shape[1:])}) at a run-time index "
                "or after one (for example in a while loop). Elements may differ in shape "
                "(infer_shape=False) only while every write uses a constant index outside "
                "loops: sluice then keeps them as a list while building the graph; a compiled "
                "step cannot return an element whose shape is known only at run time."
            )
        if self._listed:
            size = self._list_size()
        else:
            size = self._info.initial_size if self.dynamic_size else self._info.static_size
        if size is None:
            raise ValueError(
                f"TensorArray {self._info.name}: {op} of elements of different shapes needs the "
                "array's size as a constant (it is kept as a list while building the graph)"
            )
        flow = ta_ops.elements_flow([self._flow] + inputs)
        if failure is not None:
            flow = ta_ops.error(flow, failure)
        out = self._with_flow(flow, self._written | set(writes), elements, listed=True)
        out._list_rows = max([size] + [k + 1 for k in elements]) if self.dynamic_size else size
        return out

    def _list_size(self) -> int:
        return self._list_rows

    def write(self, index: Any, value: Any, name: str | None = None) -> TensorArray:
        """A new TensorArray with element `index` set to `value`.

        Raises:
          InvalidArgumentError: another dtype (at construction); an index out of range or
            written before (when the write runs; for a second write, when both indices are
            constants).
          ValueError: with infer_shape, a shape unlike the other elements'.
        """
        with _name_scope(name, "TensorArrayWrite", [self._flow]):
            index = core_ops.convert_to_tensor(index, dtype=dtypes.int32)
            value = self._value(value)
            self._info.check_element_shape(value.shape)
            known = constant_int(index)
            failure = self._write_failure(known, value.shape)
            if self._listed or not self._fits(value.shape):
                if known is None:
                    return self._as_list({}, [], None, f"a write at index {index.name}")
                return self._as_list({known: value}, [value], failure, "a write")
            if self._info.aggregate and not self.dynamic_size:
                flow = ta_ops.add_write(self._flow, index, value)
            else:
                if self._info.aggregate and known in self._written:
                    before = ta_ops.read(self._flow, index, self.element_shape)
                    value = core_ops.apply_op("AddV2", [before, value]).outputs[0]
                flow = ta_ops.write(self._flow, index, value, self.dynamic_size)
            if failure is not None:
                flow = ta_ops.error(flow, failure)
        written = self._written | {known} if known is not None else self._written
        elements = self._elements_after({known: value}) if known is not None else None
        return self._with_flow(flow, written, elements)

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> TensorArray:
        """A new TensorArray with element `indices[k]` set to `value[k]`."""
        with _name_scope(name, "TensorArrayScatter", [self._flow]):
            indices = core_ops.convert_to_tensor(indices, dtype=dtypes.int32)
            value = self._value(value)
            if value.shape.rank is not None and value.shape.rank >= 1:
                self._info.check_element_shape(value.shape[1:])
            known = constant_value(indices)
            writes = {}
            if known is not None and known.ndim == 1 and value.shape.rank is not None:
                pieces = lists.Pieces(value, len(known))
                writes = {int(i): lists.Piece(pieces, k) for k, i in enumerate(known)}
            row = value.shape[1:] if value.shape.rank is not None else TensorShape(None)
            if self._listed or not self._fits(row):
                if known is None:
                    return self._as_list({}, [], None, f"a scatter at indices {indices.name}")
                return self._as_list(writes, [value], None, "a scatter")
            flow = ta_ops.scatter(self._flow, indices, value, self.dynamic_size)
        elements = self._elements_after(writes) if known is not None else None
        return self._with_flow(flow, self._written | set(writes), elements)

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
        the given `lengths` (pieces of different lengths make the array a list, see the module
        docstring; lengths known only at run time must be equal).

        Raises:
          InvalidArgumentError: when the split runs, as TF1's kernel: lengths not a vector, a
            scalar value, lengths that do not sum to the value's rows, or not one per element.
        """
        with _name_scope(name, "TensorArraySplit", [self._flow]):
            value = self._value(value)
            label = self._info.label
            lengths = core_ops.convert_to_tensor(lengths, preferred_dtype=dtypes.int64)
            known = constant_value(lengths)
            if known is None:
                flow = ta_ops.split(self._flow, value, lengths, self.dynamic_size, label)
                return self._with_flow(flow, self._written)
            sizes = [int(n) for n in known.reshape(-1)]
            rows = value.shape[0] if value.shape.rank else None
            failure = None
            if value.shape.rank == 0:
                failure = "Expected value to be at least a vector, but received shape: []"
            elif known.ndim != 1:
                failure = f"Expected lengths to be a vector, received shape: {list(known.shape)}"
            elif rows is not None and sum(sizes) != rows:
                failure = (
                    "Expected sum of lengths to be equal to values.shape[0], but sum of lengths "
                    f"is {sum(sizes)} and value's shape is: {_shape_text(value.shape)}"
                )
            if failure is not None:
                flow = ta_ops.error(self._flow, f"TensorArray {label}: {failure}")
                return self._with_flow(flow, self._written)
            size = self._info.static_size
            if not self.dynamic_size and size is not None and size != len(sizes):
                failure = (
                    f"TensorArray {label}: TensorArray's size is not equal to the size of "
                    f"lengths ({size} vs. {len(sizes)}), and the TensorArray is not marked as "
                    "dynamically resizeable"
                )
            if len(set(sizes)) <= 1 and value.shape.rank is not None:
                out = self._split_equal(value, sizes)
                if failure is not None:
                    out = out._with_flow(ta_ops.error(out.flow, failure), out._written)
                return out
            pieces = lists.Pieces(value, len(sizes), sizes)
            writes = {k: lists.Piece(pieces, k) for k in range(len(sizes))}
            return self._as_list(writes, [value], failure, "a split into unequal lengths")

    def _split_equal(self, value: Tensor, sizes: list[int]) -> TensorArray:
        length, count = (sizes[0] if sizes else 0), len(sizes)
        rest = value.shape[1:]
        shape = (
            [count, length] + rest.as_list()
            if rest.is_fully_defined()
            else join_ops.concat([core_ops.constant([count, length]), fill_ops.shape(value)[1:]], 0)
        )
        out = self.scatter(fill_ops.range(count), array_ops.reshape(value, shape))
        if out._elements is not None:  # the pieces are the value's slices, not the reshape's rows
            pieces = lists.Pieces(value, count, sizes)
            out._elements = self._elements_after({k: lists.Piece(pieces, k) for k in range(count)})
        return out

    # -- reads -------------------------------------------------------------------------------
    def _read_index(self, index: Tensor) -> tuple[Tensor, list]:
        """`index` through the clear_after_read check against earlier reads of this value in
        the same loop frame or branch, and the ops the read must run after."""
        if not self._info.clear_after_read:
            return index, []
        g = index.graph
        ctx, ordered = g.control_flow_context, set(g.current_control_dependencies())
        known = constant_int(index)
        earlier = [
            (i, op)
            for c, i, op, own in self._reads
            if c is ctx
            and (own is self or op in ordered)
            and (known is None or constant_int(i) in (None, known))
        ]
        if not earlier:
            return index, []
        with g.control_dependencies([op for _, op in earlier]):
            checked = ta_ops.read_once(index, [i for i, _ in earlier], self._info.label)
        return checked, [checked.op]

    def _note_read(self, index: Tensor, read: Tensor) -> None:
        if self._info.clear_after_read:
            ctx = index.graph.control_flow_context
            self._reads = self._reads + ((ctx, index, read.op, self),)

    def read(self, index: Any, name: str | None = None) -> Tensor:
        """Element `index` (zeros if it was never written and its shape is fully known).

        Raises:
          InvalidArgumentError: an index out of range, or read before with
            clear_after_read=True (when the read runs).
        """
        latest = self._ordered_latest()
        if latest is not self:
            return latest.read(index, name)
        with _name_scope(name, "TensorArrayRead", [self._flow]):
            index = core_ops.convert_to_tensor(index, dtype=dtypes.int32)
            _, after = self._read_index(index)
            if self._listed:
                known = constant_int(index)
                with index.graph.control_dependencies([self._flow.op] + after):
                    out = ta_ops.element(self._list_element(known, index), self.element_shape)
            else:
                with index.graph.control_dependencies(after):
                    out = ta_ops.read(self._flow, index, self._dense_element())
                if not self._info.infer_shape:  # TF1: the given element shape, not the writes'
                    out = ta_ops.element(out, self.element_shape)
            self._note_read(index, out)
            return out

    def _list_element(self, known: int | None, index: Tensor) -> Tensor:
        label = self._info.label
        if known is None:
            stacked = self._list_stack("a read at a run-time index")
            return gather_ops.gather(stacked, index)
        size = self._list_size()
        if known < 0 or known >= size:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"TensorArray {label}: Tried to read from index {known} but array size is: {size}",
            )
        if known in self._elements:
            return lists.tensor_of(self._elements[known])
        return lists.zeros_for(label, known, self.element_shape, self.dtype)

    def _list_stack(self, what: str) -> Tensor:
        try:
            return lists.stack(
                self._info.label, self._elements, self._list_size(), self.element_shape, self.dtype
            )
        except errors.InvalidArgumentError as err:
            raise errors.InvalidArgumentError(None, None, f"{what}: {err.message}") from None

    def gather(self, indices: Any, name: str | None = None) -> Tensor:
        """The elements at `indices`, stacked: [len(indices), *element_shape]."""
        latest = self._ordered_latest()
        if latest is not self:
            return latest.gather(indices, name)
        with _name_scope(name, "TensorArrayGather", [self._flow]):
            indices = core_ops.convert_to_tensor(indices, dtype=dtypes.int32)
            if self._listed:
                known = constant_value(indices)
                with indices.graph.control_dependencies([self._flow.op]):
                    if known is not None and known.ndim == 1:
                        picked = {
                            j: self._list_element(int(k), indices) for j, k in enumerate(known)
                        }
                        return lists.stack(
                            self._info.label, picked, len(picked), self.element_shape, self.dtype
                        )
                    return gather_ops.gather(self._list_stack("a gather"), indices)
            return ta_ops.gather(self._flow, indices, self._dense_element())

    def stack(self, name: str | None = None) -> Tensor:
        """All elements stacked: [size, *element_shape].

        Raises:
          InvalidArgumentError: elements of different shapes.
        """
        latest = self._ordered_latest()
        if latest is not self:
            return latest.stack(name)
        with _name_scope(name, "TensorArrayStack", [self._flow]):
            if self._listed:
                with self._flow.graph.control_dependencies([self._flow.op]):
                    return self._list_stack("stack")
            stacked = ta_ops.stack(self._flow, self._dense_element())
            if self.element_shape.rank is not None:
                stacked.set_shape(
                    TensorShape([self._info.static_size]).concatenate(self.element_shape)
                )
            return stacked

    def concat(self, name: str | None = None) -> Tensor:
        """All elements concatenated along their first axis (they may differ in it).

        Raises:
          InvalidArgumentError: scalar elements, or elements that differ after their first
            dimension.
        """
        latest = self._ordered_latest()
        if latest is not self:
            return latest.concat(name)
        with _name_scope(name, "TensorArrayConcat", [self._flow]):
            if self._listed:
                with self._flow.graph.control_dependencies([self._flow.op]):
                    return lists.concat(
                        self._info.label,
                        self._elements,
                        self._list_size(),
                        self.element_shape,
                        self.dtype,
                    )
            return ta_ops.concat(self._flow, self._dense_element())

    def size(self, name: str | None = None) -> Tensor:
        """The number of elements, an int32 scalar (for dynamic_size: highest written + 1)."""
        rows = self._list_size() if self._listed else self._info.static_size
        with _name_scope(name, "TensorArraySize", [self._flow]):
            if rows is not None:
                return core_ops.constant(rows, dtype=dtypes.int32)
            return ta_ops.size(self._flow)

    # -- other -------------------------------------------------------------------------------
    def identity(self) -> TensorArray:
        """A TensorArray over an Identity of the flow (ops that must run before it)."""
        out = self._with_flow(
            core_ops.identity(self._flow), self._written, self._elements, self._listed
        )
        if self._listed:
            out._list_rows = self._list_rows
        return out

    def close(self, name: str | None = None) -> Operation:
        """An op that does nothing (a value needs no closing), ordered after the array."""
        g = self._flow.graph
        with g.control_dependencies([self._flow.op]):
            return core_ops.apply_op("NoOp", [], name=name or "TensorArrayClose")

    def mark_used(self) -> None:
        """Accepted for TF1 compatibility (TF1 warns about unused arrays; sluice does not)."""

    def grad(self, source: str, flow: Any = None, name: str | None = None) -> TensorArray:
        """The gradient array of this one for gradient `source` (TF1's TensorArray.grad): the
        same size, dtype and element shape, writes to one index add up, reads never clear.

        sluice differentiates TensorArray ops with `sl.gradients` directly; this is for TF1 code
        that builds gradient arrays itself. As in TF1, every value of one array gives the same
        gradient array for one `source` (the first call makes it; `flow` is accepted for TF1
        compatibility). Its later values are seen by reads ordered after their writes by
        `control_dependencies` (see `read`).
        """
        return self._grad(source, None, name)

    def _grad(self, source: str, prepend: Any, name: str | None) -> TensorArray:
        """`grad`, with `prepend` (an int vector, or None): dims the gradient's elements have
        before this array's element shape (TF1's TensorArrayGradWithShape)."""
        known = self._info.grads.get(source)
        if known is not None:
            return known
        with _name_scope(name, "TensorArrayGrad", [self._flow]):
            size = self.size()
            element = self.element_shape
            if prepend is not None:
                if isinstance(prepend, TensorShape):
                    if not prepend.is_fully_defined():
                        raise ValueError(
                            f"TensorArray {self._info.name}: the shape to prepend to the "
                            f"gradient's elements must be fully defined, got {prepend}"
                        )
                    prepend = prepend.as_list()
                prepend = core_ops.convert_to_tensor(prepend, dtype=dtypes.int32)
                count = prepend.shape[0] if prepend.shape.rank == 1 else None
                if element.rank is not None and count is not None:
                    element = TensorShape([None] * count).concatenate(element)
                else:
                    element = TensorShape(None)
            buffer = ta_ops.create(
                size, self.dtype, element, self.dynamic_size, f"{self._info.name}@{source}", prepend
            )
        out = TensorArray.__new__(TensorArray)
        out._init_state()
        out._start(buffer, self.dtype, element, self.dynamic_size, False, self._info.infer_shape)
        out._info.aggregate = True
        self._info.grads[source] = out
        return out


def grad_with_shape(array: TensorArray, source: str, prepend: Any, name: str | None) -> TensorArray:
    """`array.grad(source)` whose elements have the dims `prepend` (an int vector or a
    TensorShape) before `array`'s element shape (TF1's TensorArrayGradWithShape)."""
    return array._grad(source, prepend, name)


# -- passing arrays through while_loop and cond ---------------------------------------------------
def is_tensor_array(x: Any) -> bool:
    return isinstance(x, TensorArray)


def flows_of(values: list) -> list:
    """Each TensorArray replaced by its flow; other values as they are.

    Raises:
      ValueError: an array kept as a list (elements of different shapes)."""
    for v in values:
        if isinstance(v, TensorArray) and v._listed:
            raise ValueError(
                f"TensorArray {v._info.name} holds elements of different shapes, which sluice "
                "keeps as a list while building the graph (see sl.TensorArray): it cannot be a "
                "loop variable of while_loop or a result of cond. Give its elements one shape, "
                "or use it outside the loop or cond."
            )
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
