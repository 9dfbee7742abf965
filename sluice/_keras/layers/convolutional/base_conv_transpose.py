"""The transposed convolutions' shared base (see base_conv's docstring for the maths)."""

from __future__ import annotations

from typing import Any

from sluice._keras.layers.convolutional.base_conv import (
    _Conv,
    _padding,
    _transpose_length,
    _transpose_padding,
    _tuple,
)
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.nn import conv_ops


class _ConvTranspose(_Conv):
    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        output_padding: Any = None,
        data_format: str | None = None,
        dilation_rate: Any = 1,
        **kwargs: Any,
    ):
        super().__init__(filters, kernel_size, strides, data_format, dilation_rate, **kwargs)
        self.padding = _padding(padding, ("valid", "same"))
        self.output_padding = None
        if output_padding is not None:
            self.output_padding = _tuple(
                output_padding, self.rank, f"{type(self).__name__} output_padding", True
            )
            if any(p >= s for p, s in zip(self.output_padding, self.strides)):
                raise ValueError(
                    f"{type(self).__name__}: each output_padding must be smaller than its "
                    f"stride, got output_padding={self.output_padding}, strides={self.strides}."
                )

    def _kernel_shape(self, channels: int) -> tuple:
        return self.kernel_size + (self.filters, channels)

    def _output_padding(self) -> tuple:
        return self.output_padding or (None,) * self.rank

    def _transpose2d(self, x: Any, kernel: Any, strides, output_padding, dilations) -> Any:
        """The transposed convolution of a 4-D `x` (see the module docstring)."""
        spatial = x.shape.as_list()[1:3]
        if None in spatial:
            raise ValueError(
                f"{type(self).__name__} {self.name!r} needs inputs of known spatial size, got "
                f"{x.shape}."
            )
        sizes, pads, crops = [], [[0, 0]], [[0, 0]]
        for n, k, s, p, d in zip(spatial, kernel.shape.as_list()[:2], strides, output_padding,
                                 dilations):  # fmt: skip
            left, right = _transpose_padding(k, s, self.padding, p, d)
            span = (k - 1) * d + 1
            before, after = span - 1 - left, span - 1 - right
            length = _transpose_length(n, k, s, self.padding, p, d)
            sizes.append(length - max(0, -after))
            pads.append([before, max(0, after)])
            crops.append([0, max(0, -after)])
        batch = fill_ops.shape(x)[0]
        input_sizes = join_ops.stack([batch, sizes[0], sizes[1], self.filters])
        y = conv_ops.conv2d_backprop_input(
            input_sizes,
            kernel,
            x,
            strides=list(strides),
            padding=pads + [[0, 0]],
            dilations=list(dilations),
        )
        if any(c[1] for c in crops):
            y = join_ops.pad(y, crops + [[0, 0]])
        return y

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        spatial = tuple(
            _transpose_length(n, k, s, self.padding, p, d)
            for n, k, s, p, d in zip(
                input_shape[1:-1],
                self.kernel_size,
                self.strides,
                self._output_padding(),
                self.dilation_rate,
            )
        )
        return (input_shape[0],) + spatial + (self.filters,)

    def get_config(self) -> dict:
        return {**super().get_config(), "output_padding": self.output_padding}
