"""`TensorSpec`: the shape and dtype a Tensor may have (TF 1.15's `tf.TensorSpec`).

A TF1 program gives one as a `while_loop` shape invariant, where it says the loop variable's
shape and dtype at once; `SparseTensorSpec` (beside `SparseTensor`) does the same for a sparse
loop variable.

>>> spec = sl.TensorSpec([None, 3], sl.float32)
>>> spec.is_compatible_with(sl.zeros([2, 3]))
True
>>> spec.is_compatible_with(sl.zeros([2, 3], sl.int32))
False
>>> spec
TensorSpec(shape=(?, 3), dtype=sl.float32, name=None)
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape, as_shape


@export("TensorSpec")
class TensorSpec:
    """Describes a Tensor: its (partly known) shape, its dtype and an optional name.

    Args:
      shape: anything `TensorShape` accepts (None: any shape).
      dtype: the dtype of the values.
      name: an optional name of the described tensor.

    Raises:
      TypeError: `dtype` is not a dtype.
    """

    def __init__(self, shape: Any, dtype: Any = dtypes.float32, name: str | None = None):
        self._shape = as_shape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name

    @classmethod
    def from_tensor(cls, tensor: Tensor, name: str | None = None) -> TensorSpec:
        """The spec of `tensor`, named after its op unless `name` is given.

        Raises:
          ValueError: `tensor` is not a Tensor.
        """
        if not isinstance(tensor, Tensor):
            raise ValueError(f"TensorSpec.from_tensor: expected a Tensor, got {tensor!r}.")
        return cls(tensor.shape, tensor.dtype, name or tensor.op.name)

    @classmethod
    def from_spec(cls, spec: TensorSpec, name: str | None = None) -> TensorSpec:
        return cls(spec.shape, spec.dtype, name or spec.name)

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def name(self) -> str | None:
        return self._name

    def is_compatible_with(self, spec_or_tensor: Any) -> bool:
        """Whether a Tensor or TensorSpec has this dtype and a shape compatible with this one."""
        return (
            isinstance(spec_or_tensor, (TensorSpec, Tensor))
            and spec_or_tensor.dtype == self._dtype
            and self._shape.is_compatible_with(spec_or_tensor.shape)
        )

    def most_specific_compatible_type(self, other: TensorSpec) -> TensorSpec:
        """The most specific spec both `self` and `other` satisfy.

        Raises:
          ValueError: `other` is not a TensorSpec of the same dtype.
        """
        if type(other) is not type(self) or other.dtype != self._dtype:
            raise ValueError(f"Types are not compatible: {self!r} vs {other!r}")
        shape = self._shape.most_specific_compatible_shape(other.shape)
        return TensorSpec(shape, self._dtype, self._name if self._name == other.name else None)

    def _key(self) -> tuple:
        dims = None if self._shape.rank is None else tuple(self._shape.as_list())
        return (dims, self._dtype, self._name)

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key()[:2])

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self._shape}, dtype={self._dtype!r}, name={self._name!r})"
