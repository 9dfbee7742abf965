"""Adaptive pooling (Keras 3's AdaptiveAveragePooling1D/2D/3D, AdaptiveMaxPooling1D/2D/3D):
pooling to a given output size whatever the input size.

Along each spatial axis of length L pooled to `out` positions, output i reduces the inputs
[floor(i * L / out), ceil((i + 1) * L / out)) (windows of two sizes that may overlap, as
PyTorch's and Keras's adaptive pooling). A box's mean (maximum) is the mean (maximum) along one
axis of those along the others, so the axes are pooled one after the other, each as `out`
slices reduced and concatenated. The spatial sizes must be known.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.arguments import _data_format
from sluice._keras.layers.base import Layer
from sluice._keras.layers.input_spec import InputSpec
from sluice.framework.ops.array import join_ops
from sluice.framework.ops.math import reduction_ops


def adaptive_windows(length: int, out: int) -> list[tuple[int, int]]:
    """The [start, end) of each of the `out` windows over `length` positions."""
    return [((i * length) // out, -((-(i + 1) * length) // out)) for i in range(out)]


class AdaptivePooling(Layer):
    """Adaptive pooling of rank `rank` (see the module docstring)."""

    rank = 2
    _reduce = None  # reduction_ops.reduce_mean or reduction_ops.reduce_max

    def __init__(self, output_size: Any, data_format: str | None = None, **kwargs: Any):
        cls = type(self).__name__
        if isinstance(output_size, int):
            size = (output_size,) * self.rank
        elif isinstance(output_size, (tuple, list)) and len(output_size) == self.rank:
            size = tuple(output_size)
        else:
            raise TypeError(
                f"{cls}: `output_size` must be an integer or a tuple of {self.rank} integers. "
                f"Received: {output_size} of type {type(output_size)}"
            )
        if any(not isinstance(n, int) or n < 1 for n in size):
            raise ValueError(f"{cls}: `output_size` must be positive, got {output_size}.")
        super().__init__(**kwargs)
        self.output_size = size
        self.data_format = _data_format(data_format)

    def _spatial_axes(self) -> list[int]:
        first = 2 if self.data_format == "channels_first" else 1
        return list(range(first, first + self.rank))

    def build(self, input_shape: tuple) -> None:
        cls = type(self).__name__
        if len(input_shape) != self.rank + 2:
            raise ValueError(
                f"{cls} {self.name!r} expects inputs of rank {self.rank + 2}, got shape "
                f"{tuple(input_shape)}."
            )
        if any(input_shape[a] is None for a in self._spatial_axes()):
            raise ValueError(
                f"{cls} {self.name!r} needs inputs of known spatial size, got shape "
                f"{tuple(input_shape)}."
            )
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs: Any) -> Any:
        y = inputs
        for axis, out in zip(self._spatial_axes(), self.output_size):
            length = y.shape.as_list()[axis]
            pieces = []
            for start, end in adaptive_windows(length, out):
                index = [slice(None)] * y.shape.rank
                index[axis] = slice(start, end)
                pieces.append(type(self)._reduce(y[tuple(index)], axis=[axis], keepdims=True))
            y = pieces[0] if out == 1 else join_ops.concat(pieces, axis)
        return y

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        batch = input_shape[0]
        if self.data_format == "channels_last":
            return (batch, *self.output_size, input_shape[-1])
        return (batch, input_shape[1], *self.output_size)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "output_size": self.output_size,
            "data_format": self.data_format,
        }


def _adaptive(name: str, rank: int, reduce: Any, kind: str) -> type:
    doc = (
        f"Adaptive {kind} pooling over {rank}-D inputs ([batch, *spatial, channels], or "
        f"channels first) to `output_size` (an int or {rank} ints); see `adaptive_pooling`."
    )
    return type(name, (AdaptivePooling,), {"rank": rank, "_reduce": staticmethod(reduce),
                                           "__doc__": doc, "__module__": __name__})  # fmt: skip


AdaptiveAveragePooling1D = export("layers.AdaptiveAveragePooling1D")(
    _adaptive("AdaptiveAveragePooling1D", 1, reduction_ops.reduce_mean, "average")
)
AdaptiveAveragePooling2D = export("layers.AdaptiveAveragePooling2D")(
    _adaptive("AdaptiveAveragePooling2D", 2, reduction_ops.reduce_mean, "average")
)
AdaptiveAveragePooling3D = export("layers.AdaptiveAveragePooling3D")(
    _adaptive("AdaptiveAveragePooling3D", 3, reduction_ops.reduce_mean, "average")
)
AdaptiveMaxPooling1D = export("layers.AdaptiveMaxPooling1D")(
    _adaptive("AdaptiveMaxPooling1D", 1, reduction_ops.reduce_max, "max")
)
AdaptiveMaxPooling2D = export("layers.AdaptiveMaxPooling2D")(
    _adaptive("AdaptiveMaxPooling2D", 2, reduction_ops.reduce_max, "max")
)
AdaptiveMaxPooling3D = export("layers.AdaptiveMaxPooling3D")(
    _adaptive("AdaptiveMaxPooling3D", 3, reduction_ops.reduce_max, "max")
)
