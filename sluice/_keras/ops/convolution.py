"""`keras.ops` convolutions and poolings (Keras's `ops/nn.py`): `conv`, `depthwise_conv`,
`separable_conv`, `conv_transpose`, `max_pool`, `average_pool`, `adaptive_max_pool`,
`adaptive_average_pool`, over the engine's 2-D ops (Conv2D, DepthwiseConv2dNative, MaxPool,
AvgPool) whose gradients are registered; 1-D inputs run as height-1 images. Inputs are
[batch, *spatial, channels] ("channels_last") or [batch, channels, *spatial]; 3-D (volumes)
are not supported and say so.

>>> sl.ops.conv(np.ones((1, 4, 1), np.float32), np.ones((2, 1, 1), np.float32)).ravel()
Array([2., 2., 2.], dtype=float32)
>>> sl.ops.max_pool(np.arange(8.0).reshape(1, 4, 2, 1), 2).ravel()
Array([3., 7.])
"""

from __future__ import annotations

import builtins
from typing import Any

from sluice._keras import config
from sluice._keras.layers.convolutional.base_conv import standardize_tuple
from sluice._keras.layers.convolutional.base_conv_transpose import transpose_padding
from sluice._keras.ops.eager import floating, keras_op, known_rank, promoted
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.math import reduction_ops
from sluice.framework.ops.nn import conv_ops, depthwise_conv_ops, pool_ops


def _layout(inputs: Any, what: str, data_format: str | None) -> tuple[Any, int, bool]:
    """(inputs channels-last as a 4-D image, the spatial rank, whether it was channels
    first): a 1-D input gets a height of 1."""
    rank = known_rank(inputs, what) - 2
    if rank not in (1, 2):
        raise NotImplementedError(
            f"{what}: inputs of {rank} spatial dimensions (shape {inputs.shape}) are not "
            "supported; 1-D ([batch, steps, channels]) and 2-D images are."
        )
    first = (data_format or config.image_data_format()) == "channels_first"
    if first:
        inputs = array_ops.transpose(inputs, [0] + list(range(2, rank + 2)) + [1])
    if rank == 1:
        inputs = array_ops.expand_dims(inputs, 1)
    return inputs, rank, first


def _restore(y: Any, rank: int, first: bool) -> Any:
    if rank == 1:
        y = array_ops.squeeze(y, [1])
    if first:
        y = array_ops.transpose(y, [0, rank + 1] + list(range(1, rank + 1)))
    return y


def _pairs(value: Any, rank: int, what: str) -> list[int]:
    """An int or `rank` ints as the 2 ints of the height-1 image for rank 1."""
    found = list(standardize_tuple(value, rank, what))
    return [1] + found if rank == 1 else found


def _kernel_2d(kernel: Any, rank: int) -> Any:
    return array_ops.expand_dims(kernel, 0) if rank == 1 else kernel


def _padding(padding: str, what: str) -> str:
    padding = padding.lower()
    if padding not in ("valid", "same"):
        raise ValueError(f"{what}: padding must be 'valid' or 'same', got {padding!r}.")
    return padding.upper()


@keras_op("conv", "nn.conv")
def conv(
    inputs: Any,
    kernel: Any,
    strides: Any = 1,
    padding: str = "valid",
    data_format: str | None = None,
    dilation_rate: Any = 1,
) -> Any:
    """`inputs` convolved (cross-correlated) with `kernel` [*kernel_size, in_channels,
    out_channels].

    Raises:
      NotImplementedError: 3-D inputs, or grouped kernels (in_channels not the input's).
    """
    inputs, kernel = promoted(floating(inputs), floating(kernel))
    x, rank, first = _layout(inputs, "conv", data_format)
    channels, k_in = x.shape[-1], kernel.shape[-2]
    if channels is not None and k_in is not None and channels != k_in:
        raise NotImplementedError(
            f"conv: a kernel of {k_in} input channels for inputs of {channels} (grouped "
            "convolution) is not supported."
        )
    y = conv_ops.conv2d(
        x,
        _kernel_2d(kernel, rank),
        strides=_pairs(strides, rank, "conv strides"),
        padding=_padding(padding, "conv"),
        dilations=_pairs(dilation_rate, rank, "conv dilation_rate"),
    )
    return _restore(y, rank, first)


@keras_op("depthwise_conv", "nn.depthwise_conv")
def depthwise_conv(
    inputs: Any,
    kernel: Any,
    strides: Any = 1,
    padding: str = "valid",
    data_format: str | None = None,
    dilation_rate: Any = 1,
) -> Any:
    """Each input channel convolved with its own filters: `kernel` [*kernel_size, channels,
    multiplier] gives channels * multiplier outputs (channel c * multiplier + m)."""
    inputs, kernel = promoted(floating(inputs), floating(kernel))
    x, rank, first = _layout(inputs, "depthwise_conv", data_format)
    y = depthwise_conv_ops.depthwise_conv2d(
        x,
        _kernel_2d(kernel, rank),
        strides=[1, *_pairs(strides, rank, "depthwise_conv strides"), 1],
        padding=_padding(padding, "depthwise_conv"),
        dilations=_pairs(dilation_rate, rank, "depthwise_conv dilation_rate"),
    )
    return _restore(y, rank, first)


@keras_op("separable_conv", "nn.separable_conv")
def separable_conv(
    inputs: Any,
    depthwise_kernel: Any,
    pointwise_kernel: Any,
    strides: Any = 1,
    padding: str = "valid",
    data_format: str | None = None,
    dilation_rate: Any = 1,
) -> Any:
    """`depthwise_conv` with `depthwise_kernel`, then a 1x1 `conv` with `pointwise_kernel`
    [*ones, channels * multiplier, out_channels]."""
    depthwise = depthwise_conv(
        inputs, depthwise_kernel, strides, padding, data_format, dilation_rate
    )
    return conv(depthwise, pointwise_kernel, 1, "valid", data_format, 1)


@keras_op("conv_transpose", "nn.conv_transpose")
def conv_transpose(
    inputs: Any,
    kernel: Any,
    strides: Any = 1,
    padding: str = "valid",
    output_padding: Any = None,
    data_format: str | None = None,
    dilation_rate: Any = 1,
) -> Any:
    """The transposed convolution (the gradient of `conv` with respect to its input) with
    `kernel` [*kernel_size, out_channels, in_channels], with Keras's output sizes: "same"
    gives size * stride, "valid" (size - 1) * stride + kernel (plus `output_padding`).

    Computed as `lax.conv_transpose`: the input with stride - 1 zeros between its entries,
    padded as Keras's JAX backend pads, convolved with the flipped kernel."""
    inputs, kernel = promoted(floating(inputs), floating(kernel))
    x, rank, first = _layout(inputs, "conv_transpose", data_format)
    padding = _padding(padding, "conv_transpose").lower()
    strides = _pairs(strides, rank, "conv_transpose strides")
    dilations = _pairs(dilation_rate, rank, "conv_transpose dilation_rate")
    extra = (
        [None] * rank
        if output_padding is None
        else list(standardize_tuple(output_padding, rank, "conv_transpose output_padding", True))
    )
    extra = [0] + extra if rank == 1 else extra
    k = _kernel_2d(kernel, rank)
    sizes = k.shape.as_list()[:2]
    if None in sizes:
        raise ValueError(f"conv_transpose: the kernel size of {kernel.shape} must be known.")
    for axis, s in ((1, strides[0]), (2, strides[1])):
        x = _spread(x, axis, s)
    pads = [[0, 0]]
    for size, s, p, d in zip(sizes, strides, extra, dilations):
        pads.append(list(transpose_padding(size, s, padding, p, d)))
    pads.append([0, 0])
    x = _pad_or_crop(x, pads)
    flipped = array_ops.transpose(array_ops.reverse(k, [0, 1]), [0, 1, 3, 2])
    y = conv_ops.conv2d(x, flipped, strides=[1, 1], padding="VALID", dilations=dilations)
    return _restore(y, rank, first)


def _spread(x: Any, axis: int, stride: int) -> Any:
    """x with stride - 1 zeros after each entry along `axis` but the last."""
    if stride == 1:
        return x
    zeros = [fill_ops.zeros_like(x)] * (stride - 1)
    woven = join_ops.stack([x, *zeros], axis=axis + 1)
    shape = fill_ops.shape(x)
    merged = join_ops.concat([shape[:axis], [-1], shape[axis + 1 :]], 0)
    spread = array_ops.reshape(woven, merged)
    return spread[(slice(None),) * axis + (slice(0, -(stride - 1)),)]


def _pad_or_crop(x: Any, pads: list) -> Any:
    """x padded with zeros by (before, after) per axis; a negative amount crops."""
    grow = [[builtins.max(a, 0), builtins.max(b, 0)] for a, b in pads]
    x = join_ops.pad(x, grow)
    cuts = tuple(slice(-a if a < 0 else 0, b if b < 0 else None) for a, b in pads)
    return x[cuts] if any(a < 0 or b < 0 for a, b in pads) else x


def _pool(op: Any, what: str, inputs: Any, pool_size: Any, strides: Any, padding: str,
          data_format: str | None) -> Any:  # fmt: skip
    x, rank, first = _layout(floating(inputs), what, data_format)
    size = _pairs(pool_size, rank, f"{what} pool_size")
    step = size if strides is None else _pairs(strides, rank, f"{what} strides")
    y = op(x, [1, *size, 1], [1, *step, 1], _padding(padding, what))
    return _restore(y, rank, first)


@keras_op("max_pool", "nn.max_pool")
def max_pool(
    inputs: Any,
    pool_size: Any,
    strides: Any = None,
    padding: str = "valid",
    data_format: str | None = None,
) -> Any:
    """The maximum over each window (`strides` default to `pool_size`)."""
    return _pool(pool_ops.max_pool, "max_pool", inputs, pool_size, strides, padding, data_format)


@keras_op("average_pool", "nn.average_pool")
def average_pool(
    inputs: Any,
    pool_size: Any,
    strides: Any = None,
    padding: str = "valid",
    data_format: str | None = None,
) -> Any:
    """The mean over each window (with "same", of the entries inside the input only)."""
    return _pool(
        pool_ops.avg_pool, "average_pool", inputs, pool_size, strides, padding, data_format
    )


def _adaptive(reduce: Any, what: str, inputs: Any, output_size: Any, data_format: Any) -> Any:
    """Output cell i of an axis of length L reduces input entries floor(i L / n) up to
    ceil((i + 1) L / n) (PyTorch's adaptive pooling, which Keras follows)."""
    x, rank, first = _layout(floating(inputs), what, data_format)
    sizes = _pairs(output_size, rank, f"{what} output_size")
    for axis, n in ((1, sizes[0]), (2, sizes[1])):
        length = x.shape[axis]
        if length is None:
            raise ValueError(f"{what}: the spatial size of {inputs.shape} must be known.")
        cells = []
        for i in range(n):
            start, stop = (i * length) // n, -((-(i + 1) * length) // n)
            window = x[(slice(None),) * axis + (slice(start, stop),)]
            cells.append(reduce(window, axis=axis, keepdims=True))
        x = join_ops.concat(cells, axis)
    return _restore(x, rank, first)


@keras_op("adaptive_max_pool", "nn.adaptive_max_pool")
def adaptive_max_pool(inputs: Any, output_size: Any, data_format: str | None = None) -> Any:
    """Max pooling to `output_size` cells per spatial axis, windows as even as can be."""
    return _adaptive(
        reduction_ops.reduce_max, "adaptive_max_pool", inputs, output_size, data_format
    )


@keras_op("adaptive_average_pool", "nn.adaptive_average_pool")
def adaptive_average_pool(inputs: Any, output_size: Any, data_format: str | None = None) -> Any:
    """Average pooling to `output_size` cells per spatial axis, windows as even as can be."""
    return _adaptive(
        reduction_ops.reduce_mean, "adaptive_average_pool", inputs, output_size, data_format
    )
