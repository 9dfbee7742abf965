"""Keras 3's rule for inputs one axis short or long of a model's `Input`s (its Functional's
`_adjust_input_rank`).

A functional model, or a `Sequential` with its input shape, takes each input as its `Input`
declares it, but for a trailing axis of size 1:

  * data one rank short, when the Input's last dimension is 1, gets that axis
    (`Input((10, 1))` fed x of shape (N, 10) sees (N, 10, 1); `Input((1,))` fed a vector);
  * data one rank long whose last dimension is 1 loses it (`Input((10,))` fed (N, 10, 1)).

Any other difference of rank is an error naming the input and both shapes. Arrays given to
`fit`, `evaluate` and `predict` are adjusted before they are fed (`adjust_arrays`); symbolic
inputs of a model called as a layer get an `expand_dims` or `squeeze` op (`adjust_tensors`). A
subclassed model's `call` receives its inputs as given, as in Keras.

>>> model = sl.Sequential([sl.Input((3, 1)), sl.layers.Flatten()])
>>> model.predict(np.ones((2, 3)), verbose=0).shape
(2, 3)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._keras.layers import tracking
from sluice._tf1.cells import nest
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops

# Sequential is found by name: importing it here would close the cycle trainer -> here ->
# sequential -> model -> trainer.
_SEQUENTIAL = ("sluice._keras.models.sequential", "Sequential")


def follows_input_rank(model: Any) -> bool:
    """Whether `model` takes its inputs as its `Input`s declare them (a functional model or a
    Sequential; Keras 3 adjusts the rank in its Functional, which a built Sequential wraps)."""
    if getattr(model, "_functional", False):
        return True
    return any((cls.__module__, cls.__name__) == _SEQUENTIAL for cls in type(model).__mro__)


def _reference(model: Any, count: int) -> list[Tensor] | None:
    """The model's input placeholders when the rule applies and they pair with `count`
    inputs; None otherwise (the model is not built, or the inputs are miscounted, which the
    caller reports)."""
    if not follows_input_rank(model):
        return None
    placeholders = model.inputs
    if not placeholders or len(placeholders) != count:
        return None
    return placeholders


def _ranks(model: Any, index: int, ref: Tensor, shape: tuple) -> str | None:
    """What to do for an input of `shape` given to the Input `ref`: None (as is), "expand",
    "squeeze"; raises for any other rank."""
    ref_dims = ref.shape.as_list() if ref.shape.rank is not None else None
    if ref_dims is None or shape is None or len(shape) == len(ref_dims):
        return None
    if len(shape) == len(ref_dims) + 1 and shape[-1] == 1:
        return "squeeze"
    if len(shape) == len(ref_dims) - 1 and ref_dims[-1] == 1:
        return "expand"
    names = getattr(model, "_input_names", None) or []
    name = names[index] if index < len(names) else ref.op.name
    raise ValueError(
        f"Invalid input shape for input {index} ({name!r}) of model {model.name!r}: expected "
        f"shape {tuple(ref_dims)}, but the input has the incompatible shape {tuple(shape)} "
        "(only a missing or extra trailing axis of size 1 is added or removed)."
    )


def adjust_arrays(model: Any, arrays: list) -> list:
    """`arrays` (one per model input, in the order of `model.inputs`) with a trailing axis of
    size 1 added or removed where the model's Inputs ask for it.

    Raises:
      ValueError: an array whose rank differs from its Input's otherwise.
    """
    refs = _reference(model, len(arrays))
    if refs is None:
        return arrays
    out = []
    for i, (a, ref) in enumerate(zip(arrays, refs)):
        action = None if a is None else _ranks(model, i, ref, np.shape(a))
        if action == "expand":
            a = np.expand_dims(a, -1)
        elif action == "squeeze":
            a = np.squeeze(a, -1)
        out.append(a)
    return out


def _converts(given: Any, wanted: Any) -> bool:
    """Whether an input of dtype `given` is cast to its Input's floating dtype `wanted`, as
    Keras 3's functional call converts its inputs (`uint8` images fed to a float32 model)."""
    numeric = dtypes.is_floating(given) or dtypes.is_integer(given)
    return given != wanted and dtypes.is_floating(wanted) and (numeric or given.name == "bool")


def adjust_tensors(model: Any, inputs: Any) -> Any:
    """`inputs` (a tensor or a structure of them, as given to the model's call) with an
    `expand_dims` or `squeeze` op on each one a trailing axis of size 1 short or long of its
    Input, and a cast of an integer, boolean or other floating input to its Input's floating
    dtype; masks carry over.

    Raises:
      ValueError: a tensor whose rank differs from its Input's otherwise.
    """
    flat = nest.flatten(inputs)
    refs = _reference(model, len(flat))
    if refs is None:
        return inputs
    out = []
    for i, (t, ref) in enumerate(zip(flat, refs)):
        shape = None
        if isinstance(t, Tensor) and t.shape.rank is not None:
            shape = tuple(t.shape.as_list())
        action = _ranks(model, i, ref, shape) if shape is not None else None
        if action is not None:
            mask = tracking.get_mask(t)
            t = array_ops.expand_dims(t, -1) if action == "expand" else array_ops.squeeze(t, [-1])
            tracking.set_mask(t, mask)
        if isinstance(t, Tensor) and _converts(t.dtype, ref.dtype):
            mask = tracking.get_mask(t)
            t = fill_ops.cast(t, ref.dtype)  # Keras 3 converts inputs to their Input's dtype
            tracking.set_mask(t, mask)
        out.append(t)
    if all(a is b for a, b in zip(out, flat)):
        return inputs
    return nest.pack_sequence_as(inputs, out)
