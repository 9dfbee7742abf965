"""`InputSpec`: what a layer accepts as its first argument (rank, dtype, shape, some axes),
checked by `Layer.__call__` before `build` and `call`, as Keras 3 does."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._tf1.cells import nest
from sluice.framework.ir import dtypes


def _dtype_name(dtype: Any) -> str:
    return dtypes.as_dtype(dtype).name


def _shape(x: Any) -> tuple:
    shape = x.shape
    dims = shape.as_list() if hasattr(shape, "as_list") else list(shape)
    return tuple(None if d is None else int(d) for d in dims)


@export("layers.InputSpec", "InputSpec")
class InputSpec:
    """The rank, dtype and shape a layer expects of each tensor of its first argument. A layer
    sets `self.input_spec` (an InputSpec, or a list of them, one per input) in `__init__` or
    `build`; each later call checks its inputs and raises a ValueError naming the layer, the
    input and what was expected. None in a shape or axes matches any size.

    Args:
      dtype: the expected dtype.
      shape: the expected shape, batch included (fixes `ndim`).
      ndim, max_ndim, min_ndim: the expected rank, or its bounds.
      axes: {axis: size} for axes of a known size (negative axes count from the end).
      allow_last_axis_squeeze: also accept one more (or one fewer) trailing axis of size 1.
      name: the key of this input when the inputs are a dict.
      optional: whether the input may be None.

    >>> InputSpec(ndim=3, axes={-1: 8})
    InputSpec(ndim=3, axes={-1: 8})
    """

    def __init__(
        self,
        dtype: Any = None,
        shape: Any = None,
        ndim: int | None = None,
        max_ndim: int | None = None,
        min_ndim: int | None = None,
        axes: dict | None = None,
        allow_last_axis_squeeze: bool = False,
        name: str | None = None,
        optional: bool = False,
    ):
        self.dtype = _dtype_name(dtype) if dtype is not None else None
        if shape is not None:
            self.shape = tuple(None if d is None else int(d) for d in shape)
            self.ndim = len(self.shape)
        else:
            self.ndim = ndim
            self.shape = None
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.name = name
        self.optional = optional
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        try:
            axes = axes or {}
            self.axes = {int(k): axes[k] for k in axes}
        except (ValueError, TypeError):
            raise TypeError(
                f"Argument `axes` must be a dict with integer keys. Received: axes={axes}"
            ) from None
        if self.axes and (self.ndim is not None or self.max_ndim is not None):
            max_dim = (self.ndim if self.ndim else self.max_ndim) - 1
            max_axis = max(self.axes)
            if max_axis > max_dim:
                raise ValueError(f"Axis {max_axis} is greater than the maximum allowed value: "
                                 f"{max_dim}")  # fmt: skip

    def __repr__(self) -> str:
        spec = [
            f"dtype={self.dtype}" if self.dtype else "",
            f"shape={self.shape}" if self.shape else "",
            f"ndim={self.ndim}" if self.ndim else "",
            f"max_ndim={self.max_ndim}" if self.max_ndim else "",
            f"min_ndim={self.min_ndim}" if self.min_ndim else "",
            f"axes={self.axes}" if self.axes else "",
        ]
        return f"InputSpec({', '.join(x for x in spec if x)})"

    def get_config(self) -> dict:
        return {
            "dtype": self.dtype,
            "shape": self.shape,
            "ndim": self.ndim,
            "max_ndim": self.max_ndim,
            "min_ndim": self.min_ndim,
            "axes": self.axes,
            "optional": self.optional,
        }

    @classmethod
    def from_config(cls, config: dict) -> InputSpec:
        return cls(**config)


def assert_input_compatibility(input_spec: Any, inputs: Any, layer_name: str) -> None:
    """Checks `inputs` (a tensor, or a structure of them) against `input_spec` (an InputSpec,
    a structure of them, or None) as Keras 3 does; raises a ValueError naming `layer_name`."""
    if not input_spec:
        return
    specs = nest.flatten(input_spec)
    if isinstance(inputs, dict):
        names = [spec.name for spec in specs]
        if all(names):
            for name in names:
                if name not in inputs:
                    raise ValueError(
                        f'Missing data for input "{name}". You passed a data dictionary with '
                        f"keys {list(inputs.keys())}. Expected the following keys: {names}"
                    )
            inputs = [inputs[name] for name in names]
    flat = nest.flatten(inputs)
    if len(flat) != len(specs):
        raise ValueError(
            f'Layer "{layer_name}" expects {len(specs)} input(s), but it received {len(flat)} '
            f"input tensors. Inputs received: {flat}"
        )
    for index, (x, spec) in enumerate(zip(flat, specs)):
        if spec is None or (x is None and spec.optional):
            continue
        if not hasattr(x, "shape"):
            raise ValueError(
                f"Inputs to a layer should be tensors. Got '{x}' (of type {type(x)}) as input "
                f"for layer '{layer_name}'."
            )
        _check_one(spec, x, index, layer_name)


def _check_one(spec: InputSpec, x: Any, index: int, layer_name: str) -> None:
    shape = _shape(x)
    ndim = len(shape)
    where = f"Input {index} with name '{spec.name}' of layer '{layer_name}' is incompatible "
    where += "with the layer:"
    if spec.ndim is not None and not spec.allow_last_axis_squeeze and ndim != spec.ndim:
        raise ValueError(
            f"{where} expected ndim={spec.ndim}, found ndim={ndim}. Full shape received: {shape}"
        )
    if spec.max_ndim is not None and ndim > spec.max_ndim:
        raise ValueError(f"{where} expected max_ndim={spec.max_ndim}, found ndim={ndim}")
    if spec.min_ndim is not None and ndim < spec.min_ndim:
        raise ValueError(
            f"{where} expected min_ndim={spec.min_ndim}, found ndim={ndim}. Full shape "
            f"received: {shape}"
        )
    if spec.dtype is not None:
        dtype = _dtype_name(x.dtype)
        if dtype != spec.dtype:
            raise ValueError(f"{where} expected dtype={spec.dtype}, found dtype={dtype}")
    for axis, value in spec.axes.items():
        if value is not None and -ndim <= axis < ndim and shape[axis] not in (value, None):
            raise ValueError(
                f"{where} expected axis {axis} of input shape to have value {value}, but "
                f"received input with shape {shape}"
            )
    if spec.shape is not None:
        spec_shape = spec.shape
        if spec.allow_last_axis_squeeze:
            if shape and shape[-1] == 1:
                shape = shape[:-1]
            if spec_shape and spec_shape[-1] == 1:
                spec_shape = spec_shape[:-1]
        for spec_dim, dim in zip(spec_shape, shape):
            if spec_dim is not None and dim is not None and spec_dim != dim:
                raise ValueError(f"{where} expected shape={spec.shape}, found shape={shape}")
