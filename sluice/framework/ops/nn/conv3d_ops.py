"""3-D convolution ops: Conv3D and its two backprops (TF1 `tf.nn.conv3d`, `conv3d_transpose`,
`conv3d_backprop_filter_v2`), over [batch, depth, height, width, channels] ("NDHWC") or
[batch, channels, depth, height, width] ("NCDHW").

As TF, `strides` and `dilations` are 5-lists in `data_format` order with 1 for the batch and
channel entries, `padding` is "SAME" or "VALID", and the filter is
[filter_depth, filter_height, filter_width, in_channels, out_channels]. Output sizes per spatial
dimension are the 2-D ones (`window_util`): "SAME" ceil(in / stride), "VALID"
(in - effective_k) // stride + 1 with effective_k = (k - 1) * dilation + 1.

The gradient of Conv3D is TF's two ops, Conv3DBackpropInputV2 (`input_sizes`, `filter`,
`out_backprop`) and Conv3DBackpropFilterV2 (`input`, `filter_sizes`, `out_backprop`), which
carry Conv3D's attrs and read the shape they produce from a host input. Their kernels are the
transposes of Conv3D's (`jax.vjp`); all three ops are bilinear, so each one's gradient is built
from the other two, as for Conv2D.

`window5` holds the attribute and shape rules that 3-D pooling (`pool3d_ops`) shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jax import lax

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array.fill_ops import shape
from sluice.framework.ops.core.array_util import (
    as_int_tensor,
    int_values,
    require_index_dtype,
    require_vector,
)
from sluice.framework.ops.core.core_ops import apply_op, convert_n
from sluice.framework.ops.core.shape_rules import require_dtype, require_rank, require_same_dtype
from sluice.framework.ops.nn.conv_ops import backprop_filter_kernel, backprop_input_kernel
from sluice.framework.ops.nn.window_util import merge_dim

FORMATS = ("NDHWC", "NCDHW")


# -- the 5-D window rules (shared with pool3d_ops) ------------------------------------------------
def check_format(data_format: str) -> None:
    if data_format not in FORMATS:
        raise ValueError(f"data_format must be 'NDHWC' or 'NCDHW', got {data_format!r}")


def spatial_axes(data_format: str) -> tuple[int, int, int]:
    return (2, 3, 4) if data_format == "NCDHW" else (1, 2, 3)


def channel_axis(data_format: str) -> int:
    return 1 if data_format == "NCDHW" else 4


def five_list(value: Any, data_format: str, what: str) -> list[int]:
    """`strides`/`ksize`/`dilations`: an int or 1, 3 or 5 ints, as the 5-list in `data_format`
    order (batch and channel entries 1 unless given)."""
    check_format(data_format)
    if value is None:
        value = [1]
    elif isinstance(value, (int, np.integer)):
        value = [value]
    value = [int(v) for v in value]
    if len(value) == 5:
        return value
    if len(value) == 1:
        value = value * 3
    elif len(value) != 3:
        raise ValueError(f"{what} must be an int or a list of 1, 3 or 5 ints, got {value}")
    return [1, 1, *value] if data_format == "NCDHW" else [1, *value, 1]


def check_window_attr(values: Sequence[int], data_format: str, what: str) -> None:
    if len(values) != 5 or any(v < 1 for v in values):
        raise ValueError(f"{what} must be 5 positive ints, got {list(values)}")
    if values[0] != 1 or values[channel_axis(data_format)] != 1:
        raise ValueError(
            f"{what} {list(values)} must be 1 in the batch and channel dimensions ({data_format})"
        )


def check_padding(padding: Any) -> str:
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    return padding


def output_size(size: int | None, k: int | None, stride: int, dilation: int, padding: str):
    """TF's output size of one spatial dimension."""
    if size is None:
        return None
    if padding == "SAME":
        return -(-size // stride)
    if k is None:
        return None
    effective_k = (k - 1) * dilation + 1
    if size < effective_k:
        raise ValueError(
            f"Negative dimension size caused by subtracting {effective_k} from {size}: the "
            f"window ({k}, dilation {dilation}) is larger than the input ({size})"
        )
    return (size - effective_k) // stride + 1


def window_output_shape(op, x: TensorShape, window: Sequence[int | None], channels: Any):
    """The 5-D output shape of windowed op `op` (attrs data_format, strides, padding and, for
    convolutions, dilations) over an input of shape `x`."""
    data_format = op.get_attr("data_format")
    strides = op.get_attr("strides")
    dilations = op.attrs.get("dilations", [1] * 5)
    padding = check_padding(op.get_attr("padding"))
    dims = x.with_rank(5).as_list()
    out = [dims[0]] + [None] * 4
    for k, d in zip(window, spatial_axes(data_format)):
        out[d] = output_size(dims[d], k, strides[d], dilations[d], padding)
    out[channel_axis(data_format)] = channels
    return TensorShape(out)


def sizes_shape(sizes: Tensor, what: str) -> TensorShape:
    """The 5-D shape given by the int vector `sizes` (a backprop op's host input)."""
    require_index_dtype(sizes, what)
    require_vector(sizes, what)
    values = int_values(sizes)
    if values is None:
        return TensorShape([None] * 5)
    if len(values) != 5:
        raise ValueError(f"{what} must have 5 entries, got {len(values)}")
    return TensorShape([v if v is not None and v >= 0 else None for v in values])


# -- shared shape rule of the three convolution ops ----------------------------------------------
def _conv3d_shapes(op, x: TensorShape, f: TensorShape, y: TensorShape) -> list[TensorShape]:
    """The shapes of a 3-D convolution's input `x`, filter `f` and output `y`, each completed
    with what the others say; raises where they disagree."""
    data_format = op.get_attr("data_format")
    check_format(data_format)
    check_window_attr(op.get_attr("strides"), data_format, "strides")
    check_window_attr(op.get_attr("dilations"), data_format, "dilations")
    c = channel_axis(data_format)
    x, f, y = (s.with_rank(5).as_list() for s in (x, f, y))
    if None not in (x[c], f[3]) and x[c] != f[3]:
        raise ValueError(
            f"input has {x[c]} channels but the filter of shape {TensorShape(f)} expects {f[3]} "
            "(its dimension 3 must equal the input's channel count)"
        )
    x[c] = f[3] = merge_dim(x[c], f[3], "input channels")
    if None not in (y[c], f[4]) and y[c] != f[4]:
        raise ValueError(
            f"out_backprop has {y[c]} channels but the filter of shape {TensorShape(f)} has "
            f"{f[4]} output channels (its dimension 4)"
        )
    y[c] = f[4] = merge_dim(y[c], f[4], "output channels")
    x[0] = y[0] = merge_dim(x[0], y[0], "batch sizes of input and out_backprop")
    expected = window_output_shape(op, TensorShape(x), f[:3], f[4])
    if not expected.is_compatible_with(TensorShape(y)):
        raise ValueError(
            f"out_backprop of shape {TensorShape(y)} does not match the convolution's output "
            f"shape {expected} for an input of shape {TensorShape(x)} and a filter of shape "
            f"{TensorShape(f)}"
        )
    return [TensorShape(x), TensorShape(f), expected.merge_with(TensorShape(y))]


def _require_floats(*tensors: Tensor) -> None:
    require_dtype(tensors[0], "floating", dtypes.is_floating)
    require_same_dtype(*tensors)


# -- Conv3D -------------------------------------------------------------------------------------
def _conv3d_infer(op) -> list:
    x, filters = op.inputs
    _require_floats(x, filters)
    require_rank(x, 5, "input")
    require_rank(filters, 5, "filter ([depth, height, width, in_channels, out_channels])")
    _, _, y = _conv3d_shapes(op, x.shape, filters.shape, TensorShape(None))
    return [(x.dtype, y)]


def _conv3d_kernel(input, filter, *, strides, padding, dilations, data_format, **_):
    axes = spatial_axes(data_format)
    return lax.conv_general_dilated(
        input,
        filter,
        window_strides=[strides[d] for d in axes],
        padding=padding,
        rhs_dilation=[dilations[d] for d in axes],
        dimension_numbers=(data_format, "DHWIO", data_format),
    )


register_op("Conv3D", infer=_conv3d_infer, kernel=_conv3d_kernel)


@register_gradient("Conv3D")
def _conv3d_grad(op, grad):
    x, w = op.inputs
    return [
        apply_op("Conv3DBackpropInputV2", [shape(x), w, grad], op.attrs).outputs[0],
        apply_op("Conv3DBackpropFilterV2", [x, shape(w), grad], op.attrs).outputs[0],
    ]


def _conv3d_attrs(strides: Any, padding: Any, data_format: str, dilations: Any) -> dict:
    if strides is None or padding is None:
        raise ValueError("a 3-D convolution needs strides and padding")
    check_format(data_format)
    return {
        "strides": five_list(strides, data_format, "strides"),
        "padding": check_padding(padding),
        "dilations": five_list(dilations, data_format, "dilations"),
        "data_format": data_format,
    }


def _one_of(a: Any, b: Any, what: str) -> Any:
    if (a is None) == (b is None):
        raise ValueError(f"give exactly one of {what}")
    return a if a is not None else b


@export("nn.conv3d")
def conv3d(
    input: Any,
    filter: Any = None,
    strides: Any = None,
    padding: Any = None,
    data_format: str = "NDHWC",
    dilations: Any = (1, 1, 1, 1, 1),
    name: str | None = None,
    filters: Any = None,
) -> Tensor:
    """3-D convolution (cross-correlation, as in TF) of `input` with `filter`.

    Args:
      input: a 5-D floating Tensor, [batch, depth, height, width, channels] for "NDHWC".
      filter: [filter_depth, filter_height, filter_width, in_channels, out_channels]
        (`filters` is an alias).
      strides: an int or a list of 1, 3 or 5 ints, the window step per dimension.
      padding: "SAME" or "VALID".
      data_format: "NDHWC" or "NCDHW".
      dilations: an int or a list of 1, 3 or 5 ints, the filter's dilation per dimension.
      name: a name for the operation.

    Returns:
      A 5-D Tensor in `data_format` with `out_channels` channels.

    >>> volumes = sl.placeholder(sl.float32, [2, 8, 8, 8, 3])
    >>> conv3d(volumes, sl.ones([3, 3, 3, 3, 4]), strides=[1, 2, 2, 2, 1], padding="SAME").shape
    TensorShape([2, 4, 4, 4, 4])
    """
    w = _one_of(filter, filters, "filter and filters (conv3d)")
    attrs = _conv3d_attrs(strides, padding, data_format, dilations)
    x, w = convert_n([input, w])
    return apply_op("Conv3D", [x, w], attrs, name).outputs[0]


# -- Conv3DBackpropInputV2 ----------------------------------------------------------------------
def _backprop_input_infer(op) -> list:
    input_sizes, filters, out_backprop = op.inputs
    _require_floats(filters, out_backprop)
    require_rank(filters, 5, "filter")
    require_rank(out_backprop, 5, "out_backprop")
    x_shape = sizes_shape(input_sizes, "input_sizes")
    x, _, _ = _conv3d_shapes(op, x_shape, filters.shape, out_backprop.shape)
    return [(out_backprop.dtype, x)]


register_op(
    "Conv3DBackpropInputV2",
    infer=_backprop_input_infer,
    kernel=backprop_input_kernel(_conv3d_kernel),
    host_inputs=(0,),
)


@register_gradient("Conv3DBackpropInputV2")
def _backprop_input_grad(op, grad):
    _, w, dy = op.inputs
    return [
        None,
        apply_op("Conv3DBackpropFilterV2", [grad, shape(w), dy], op.attrs).outputs[0],
        apply_op("Conv3D", [grad, w], op.attrs).outputs[0],
    ]


def conv3d_backprop_input_v2(
    input_sizes: Any,
    filter: Any,
    out_backprop: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NDHWC",
    dilations: Any = (1, 1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """The gradient of `conv3d` with respect to its input.

    Args:
      input_sizes: the input's shape, 5 ints (a list or an int32 Tensor).
      filter: the convolution's filter.
      out_backprop: the gradient with respect to the convolution's output.
      strides, padding, data_format, dilations: as in `conv3d`.
      name: a name for the operation.

    Returns:
      A Tensor of shape `input_sizes`, of `out_backprop`'s dtype.
    """
    attrs = _conv3d_attrs(strides, padding, data_format, dilations)
    sizes = as_int_tensor(input_sizes, "input_sizes")
    w, dy = convert_n([filter, out_backprop])
    return apply_op("Conv3DBackpropInputV2", [sizes, w, dy], attrs, name).outputs[0]


@export("nn.conv3d_transpose")
def conv3d_transpose(
    value: Any = None,
    filter: Any = None,
    output_shape: Any = None,
    strides: Any = None,
    padding: Any = "SAME",
    data_format: str = "NDHWC",
    name: str | None = None,
    input: Any = None,
    filters: Any = None,
    dilations: Any = None,
) -> Tensor:
    """The transpose of `conv3d` (a "deconvolution"): `conv3d_backprop_input_v2` of `value`.

    Args:
      value: a 5-D Tensor of `out_channels` channels (`input` is an alias).
      filter: [depth, height, width, output_channels, in_channels] (`filters` is an alias).
      output_shape: the result's shape, 5 ints (a list or an int32 Tensor).
      strides, padding, data_format, dilations: as in `conv3d`.
      name: a name for the operation.

    Returns:
      A Tensor of shape `output_shape`.
    """
    return conv3d_backprop_input_v2(
        output_shape,
        _one_of(filter, filters, "filter and filters (conv3d_transpose)"),
        _one_of(value, input, "value and input (conv3d_transpose)"),
        strides,
        padding,
        data_format=data_format,
        dilations=dilations,
        name=name,
    )


# -- Conv3DBackpropFilterV2 ---------------------------------------------------------------------
def _backprop_filter_infer(op) -> list:
    x, filter_sizes, out_backprop = op.inputs
    _require_floats(x, out_backprop)
    require_rank(x, 5, "input")
    require_rank(out_backprop, 5, "out_backprop")
    f_shape = sizes_shape(filter_sizes, "filter_sizes")
    _, f, _ = _conv3d_shapes(op, x.shape, f_shape, out_backprop.shape)
    return [(x.dtype, f)]


register_op(
    "Conv3DBackpropFilterV2",
    infer=_backprop_filter_infer,
    kernel=backprop_filter_kernel(_conv3d_kernel),
    host_inputs=(1,),
)


@register_gradient("Conv3DBackpropFilterV2")
def _backprop_filter_grad(op, grad):
    x, _, dy = op.inputs
    return [
        apply_op("Conv3DBackpropInputV2", [shape(x), grad, dy], op.attrs).outputs[0],
        None,
        apply_op("Conv3D", [x, grad], op.attrs).outputs[0],
    ]


@export("nn.conv3d_backprop_filter_v2")
def conv3d_backprop_filter_v2(
    input: Any,
    filter_sizes: Any,
    out_backprop: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NDHWC",
    dilations: Any = (1, 1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """The gradient of `conv3d` with respect to its filter.

    Args:
      input: the convolution's input.
      filter_sizes: the filter's shape, 5 ints (a list or an int32 Tensor).
      out_backprop: the gradient with respect to the convolution's output.
      strides, padding, data_format, dilations: as in `conv3d`.
      name: a name for the operation.

    Returns:
      A Tensor of shape `filter_sizes`, of `input`'s dtype.
    """
    attrs = _conv3d_attrs(strides, padding, data_format, dilations)
    sizes = as_int_tensor(filter_sizes, "filter_sizes")
    x, dy = convert_n([input, out_backprop])
    return apply_op("Conv3DBackpropFilterV2", [x, sizes, dy], attrs, name).outputs[0]
