"""A variable stored in parts (TF1's `PartitionedVariable`), and how each part knows its place.

`get_variable(name, shape, partitioner=p)` splits one logical variable of `shape` along one
axis into `k` Variables named `name/part_0` ... `name/part_{k-1}`; the first
`shape[axis] % k` parts get one more row than the rest (TF1's rule). Each part carries a
`SaveSliceInfo` (the full name and shape, and the part's offset and shape in it): a `Saver`
writes the full tensor under the full name, so a checkpoint restores into any other
partitioning, or into a plain variable of the full shape, and the reverse.

Under `sl.distribution` the parts stay separate Variables, each with its own path
(`emb/part_0`, ...) that a `LayoutMap` can lay out; they are not merged into one sharded
array. TF1 programs treat the parts as variables of their own (the optimizer keeps slots per
part, `global_variables()` lists the parts, a device function places each part, a sparse
update touches one part), and TF1's uneven parts (the first ones a row longer) are not an even
split of one array that a `NamedSharding` could describe. A program that wants one array
sharded over a mesh creates it unpartitioned and lays it out with a `LayoutMap`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ops.array import join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.variables import SaveSliceInfo, Variable

__all__ = [
    "PartitionInfo",
    "PartitionedVariable",
    "SaveSliceInfo",
    "iter_slices",
    "mark_as_part",
    "slice_axis",
    "slice_info",
]


class PartitionInfo:
    """What a partitioned variable's initializer receives as `partition_info` (TF1's
    `_PartitionInfo`): the full shape and the part's offset in it. Variance-scaling
    initializers compute their fans from `full_shape`, so parts scale as the whole would.

    >>> PartitionInfo([10, 3], [4, 0]).single_offset([3, 3])
    4
    """

    def __init__(self, full_shape: Sequence[int], var_offset: Sequence[int]):
        if not isinstance(full_shape, (list, tuple)):
            raise TypeError(f"`full_shape` must be a sequence, got {full_shape!r}.")
        if not isinstance(var_offset, (list, tuple)):
            raise TypeError(f"`var_offset` must be a sequence, got {var_offset!r}.")
        if len(var_offset) != len(full_shape):
            raise ValueError(
                f"Expected equal length, but `var_offset` is of length {len(var_offset)} while "
                f"full_shape is of length {len(full_shape)}."
            )
        for offset, dim in zip(var_offset, full_shape):
            if offset < 0 or offset >= dim:
                raise ValueError(
                    f"Expected 0 <= offset < shape but found offset {var_offset} and shape "
                    f"{full_shape}."
                )
        self.full_shape = list(full_shape)
        self.var_offset = list(var_offset)

    def single_offset(self, shape: Sequence[int]) -> int:
        """The offset along the one partitioned axis (0 when none is)."""
        axis = self.single_slice_dim(shape)
        return 0 if axis is None else self.var_offset[axis]

    def single_slice_dim(self, shape: Sequence[int]) -> int | None:
        """The axis along which a part of `shape` is a slice of the full shape, or None."""
        if not isinstance(shape, (list, tuple)):
            raise TypeError(f"`shape` must be a sequence, got {shape!r}.")
        if len(shape) != len(self.full_shape):
            raise ValueError(
                f"Expected equal length, but received shape={shape} of length {len(shape)} "
                f"while self.full_shape={self.full_shape} is of length {len(self.full_shape)}."
            )
        for i in range(len(shape)):
            if self.var_offset[i] + shape[i] > self.full_shape[i]:
                raise ValueError(
                    f"With self.var_offset={self.var_offset}, a partition of shape={shape} "
                    f"would exceed self.full_shape={self.full_shape} in dimension {i}."
                )
        axis = None
        for i in range(len(shape)):
            if shape[i] == self.full_shape[i]:
                continue
            if axis is not None:
                raise ValueError(
                    f"Cannot use single_slice_dim() with shape={shape} and "
                    f"self.full_shape={self.full_shape} since slice dim could be either "
                    f"dimension {axis} or {i}."
                )
            axis = i
        return axis


def slice_info(v: Any) -> SaveSliceInfo | None:
    """Where Variable `v` sits in the partitioned variable it is a part of (None: it is whole)."""
    return getattr(v, "_save_slice_info", None)


def mark_as_part(v: Variable, info: SaveSliceInfo) -> None:
    """Records that Variable `v` is the part `info` of a partitioned variable."""
    v._set_save_slice_info(info)


def iter_slices(full_shape: list[int], num_slices: int, axis: int) -> Iterator[tuple]:
    """(offset, shape) of each of `num_slices` parts along `axis`; the first
    `full_shape[axis] % num_slices` parts are one longer (TF1's rule)."""
    longer = full_shape[axis] % num_slices
    shortest = full_shape[axis] // num_slices
    offset = [0] * len(full_shape)
    for i in range(num_slices):
        shape = list(full_shape)
        shape[axis] = shortest + (1 if i < longer else 0)
        yield list(offset), shape
        offset[axis] += shape[axis]


def slice_axis(partitions: Sequence[int]) -> tuple[int, int]:
    """(axis, number of parts): the one axis split in more than one part, or (0, 1)."""
    for axis, count in enumerate(partitions):
        if count > 1:
            return axis, count
    return 0, 1


@export("PartitionedVariable")
class PartitionedVariable:
    """One logical variable held as several Variables, split along one axis (TF1's
    `PartitionedVariable`; `get_variable` with a `partitioner` returns one).

    Iterating gives the parts in order of their offsets; `len` counts them. Where a Tensor is
    expected (`sl.matmul(x, w)`, `sl.convert_to_tensor(w)`), the parts are concatenated along
    the partitioned axis (`as_tensor()`). `embedding_lookup(w, ids)` looks rows up in the parts
    without concatenating them. Under `sl.distribution`, the parts stay separate variables (see
    this module's docstring for why).

    Args:
      name: the full name, e.g. "emb" (no ":0"); the parts are "emb/part_<i>".
      shape: the full shape.
      dtype: the parts' dtype.
      variable_list: the parts, each with its `_save_slice_info`.
      partitions: the number of parts along each axis (one entry > 1 at most).

    Raises:
      TypeError: variable_list or partitions is not a list or tuple.
      ValueError: no parts, a part without slice information or of another full shape, a
        partition count below 1, or partitions of another rank than shape.

    >>> w = sl.get_variable("w", [5, 2], partitioner=sl.fixed_size_partitioner(2))
    >>> [v.name for v in w], [v.shape.as_list() for v in w]
    (['w/part_0:0', 'w/part_1:0'], [[3, 2], [2, 2]])
    """

    def __init__(
        self,
        name: str,
        shape: Any,
        dtype: Any,
        variable_list: Sequence[Variable],
        partitions: Sequence[int],
    ):
        if not isinstance(variable_list, (list, tuple)):
            raise TypeError(f"variable_list is not a list or tuple: {variable_list!r}")
        if not isinstance(partitions, (list, tuple)):
            raise TypeError(f"partitions is not a list or tuple: {partitions!r}")
        if not all(p >= 1 for p in partitions):
            raise ValueError(f"partition values must be positive: {list(partitions)}")
        if not variable_list:
            raise ValueError("variable_list may not be empty")
        shape = as_shape(shape)
        infos = [getattr(v, "_save_slice_info", None) for v in variable_list]
        if any(info is None for info in infos):
            raise ValueError(
                "All variables must have a save_slice_info available: "
                f"{[v.name for v in variable_list]}"
            )
        if shape.rank != len(partitions):
            raise ValueError(f"len(shape) != len(partitions): {shape} vs. {list(partitions)}")
        for info in infos:
            if info.full_shape != shape.as_list():
                raise ValueError(
                    f"All variables' full shapes must match shape: {shape}; but full shapes "
                    f"were: {[i.full_shape for i in infos]}"
                )
        self._variable_list = sorted(variable_list, key=lambda v: v._save_slice_info.var_offset)
        self._name = name
        self._shape = shape
        self._dtype = dtypes.as_dtype(dtype)
        self._partitions = list(partitions)

    def __iter__(self) -> Iterator[Variable]:
        return iter(self._variable_list)

    def __len__(self) -> int:
        axes = self._partition_axes()
        if len(axes) > 1:
            raise ValueError(f"Cannot get a length for {len(axes)} > 1 partition axes")
        return len(self._variable_list)

    def __getitem__(self, index: int) -> Variable:
        return self._variable_list[index]

    def _partition_axes(self) -> list[int]:
        """The axes split in more than one part ([0] when none is)."""
        if all(p == 1 for p in self._partitions):
            return [0]
        return [i for i, p in enumerate(self._partitions) if p > 1]

    def _concat(self) -> Tensor:
        g = self._variable_list[0].graph
        with g.as_default():
            if len(self._variable_list) == 1:
                with g.name_scope(None):
                    return core_ops.identity(self._variable_list[0], name=self._name)
            axes = self._partition_axes()
            if len(axes) > 1:
                raise NotImplementedError(
                    f"Cannot concatenate along more than one dimension: {axes}. Multi-axis "
                    "partition concat is not supported"
                )
            with g.name_scope(None), g.name_scope(self._name + "/ConcatPartitions/"):
                concatenated = join_ops.concat(self._variable_list, axes[0])
            with g.name_scope(None):
                return core_ops.identity(concatenated, name=self._name)

    def as_tensor(self) -> Tensor:
        """The full value: the parts concatenated along the partitioned axis (built outside
        any control dependencies, as TF1's)."""
        g = self._variable_list[0].graph
        with g.control_dependencies(None):
            return self._concat()

    def _as_tensor(self, dtype: Any = None) -> Tensor:
        if dtype is not None and dtypes.as_dtype(dtype) != self._dtype:
            raise ValueError(
                f"Incompatible type conversion requested to type '{dtypes.as_dtype(dtype).name}' "
                f"for variable of type '{self._dtype.name}'"
            )
        return self.as_tensor()

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return self.get_shape()

    @property
    def graph(self) -> graph_lib.Graph:
        return self._variable_list[0].graph

    def get_shape(self) -> TensorShape:
        return self._shape

    def _get_variable_list(self) -> list[Variable]:
        return self._variable_list

    def _get_partitions(self) -> list[int]:
        return self._partitions

    @property
    def partitions(self) -> list[int]:
        """The number of parts along each axis (TF1's private `_get_partitions()`)."""
        return list(self._partitions)

    def _apply_assign_fn(self, assign_fn: Any, value: Any) -> list:
        axes = self._partition_axes()
        if len(axes) > 1:
            raise NotImplementedError(
                f"Cannot do assign action along more than one dimension: {axes}. Multi-axis "
                "partition assign action is not supported"
            )
        if isinstance(value, PartitionedVariable):
            values = list(value)
        elif isinstance(value, list):
            values = value
        else:
            sizes = [v.shape.as_list()[axes[0]] for v in self._variable_list]
            with self.graph.as_default():
                values = join_ops.split(value, sizes, axis=axes[0])
        if len(values) != len(self._variable_list):
            raise ValueError(
                f"PartitionedVariable {self._name}: {len(values)} values for "
                f"{len(self._variable_list)} parts."
            )
        return [assign_fn(v, x) for v, x in zip(self._variable_list, values)]

    def assign(
        self, value: Any, use_locking: bool = False, name: str | None = None, read_value=True
    ) -> list:
        """Assigns each part its slice of `value` (a full-shape value, a list of part values,
        or another PartitionedVariable); returns the parts' assignments."""
        return self._assign("assign", value, use_locking, name, read_value)

    def assign_add(
        self, value: Any, use_locking: bool = False, name: str | None = None, read_value=True
    ) -> list:
        return self._assign("assign_add", value, use_locking, name, read_value)

    def assign_sub(
        self, value: Any, use_locking: bool = False, name: str | None = None, read_value=True
    ) -> list:
        return self._assign("assign_sub", value, use_locking, name, read_value)

    def _assign(self, how: str, value: Any, use_locking: bool, name: Any, read_value: bool):
        def assign_fn(v: Variable, x: Any) -> Any:
            return getattr(v, how)(x, use_locking=use_locking, name=name, read_value=read_value)

        results = self._apply_assign_fn(assign_fn, value)
        if read_value:
            return results
        return [r if not isinstance(r, Tensor) else r.op for r in results]

    def __repr__(self) -> str:
        return (
            f"<PartitionedVariable {self._name!r} shape={self._shape} dtype={self._dtype.name} "
            f"partitions={self._partitions}>"
        )
