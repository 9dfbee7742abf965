"""`sl.Array`: the values that calls on arrays return (a layer, a model or an `sl.ops` function
called on NumPy or JAX arrays), as Keras 3's eager calls return backend tensors.

An `Array` is a NumPy array (a subclass of `np.ndarray`), so everything that takes arrays takes
it: NumPy and JAX functions, layers and models called on it, `fit`, `predict`, `sl.ops`.
It adds what Keras code reads on a tensor: `.numpy()` (a plain `np.ndarray` viewing the same
values), and `shape`/`dtype` as NumPy has them.

In-place operators rebind, as on a JAX array (which is immutable): `a *= 255` makes a new
Array and binds it to `a`, so an Array computed by a call (whose buffer is read-only) and any
other array sharing its memory are left as they were.

Arithmetic follows NumPy's rule for subclasses: operators, ufuncs and methods on an Array give
an Array (`a + 1`, `np.exp(a)`, `a.sum(axis=0)`, `a[0]`), and a result NumPy gives as a scalar
(`a.sum()`, `a[0, 0]`) is a NumPy scalar. Functions that build new arrays from several
(`np.concatenate`, `np.stack`) and `jax.numpy` functions give their own types.

>>> a = sl.ops.add(np.ones((2, 2), np.float32), 1.0)
>>> a
Array([[2., 2.],
       [2., 2.]], dtype=float32)
>>> type(a.numpy()).__name__, a.shape, a.dtype
('ndarray', (2, 2), dtype('float32'))
>>> a.sum()
np.float32(8.0)
>>> b = a
>>> a *= 255                     # a new Array; `b` still holds the old values
>>> float(a[0, 0]), float(b[0, 0])
(510.0, 2.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export


@export("Array")
class Array(np.ndarray):
    """A value computed by a call on arrays: a NumPy array with `.numpy()` (see the module
    docstring). `sl.Array(x)` makes one from any array-like `x`."""

    def __new__(cls, value: Any, dtype: Any = None) -> Array:
        return np.asarray(value, dtype=dtype).view(cls)

    def numpy(self) -> np.ndarray:
        """The values as a plain `np.ndarray` (a view: no copy)."""
        return self.view(np.ndarray)

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False) -> Any:
        if return_scalar:  # NumPy's own rule: a full reduction gives a scalar
            return array[()]
        return super().__array_wrap__(array, context, return_scalar)

    def __reduce__(self) -> tuple:  # pickles as `Array(plain array)`
        return (Array, (self.view(np.ndarray),))


def _rebinding(name: str) -> Any:
    """The in-place operator `__i<name>__` as JAX arrays have it: the new value `a <op> b`."""
    binary = getattr(np.ndarray, f"__{name}__")

    def operator(self: Array, other: Any) -> Any:
        return binary(self, other)

    operator.__name__ = f"__i{name}__"
    operator.__doc__ = f"`a {name}= b` rebinds `a` to the new Array `a.__{name}__(b)`."
    return operator


for _name in "add sub mul truediv floordiv mod pow matmul and or xor lshift rshift".split():
    setattr(Array, f"__i{_name}__", _rebinding(_name))


def as_array(value: Any) -> Array:
    """`value` (a NumPy or JAX array, a number) as an `Array`, sharing NumPy's memory."""
    if isinstance(value, Array):
        return value
    return np.asarray(value).view(Array)
