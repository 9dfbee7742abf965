"""TF1's convolutions built on Conv2D: `conv1d`, `atrous_conv2d` and the rank-generic
`convolution`.

As in TF1, `conv1d` inserts a spatial dimension of size 1 and runs Conv2D (its gradient is
Conv2D's); `atrous_conv2d` is a Conv2D with `dilations = rate`; `convolution` picks the op by the
input's rank. No op is registered here.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.core.core_ops import convert_to_tensor
from sluice.framework.ops.nn.conv_ops import conv2d


def _one_of(a: Any, b: Any, what: str) -> Any:
    if a is not None and b is not None:
        raise ValueError(f"give at most one of {what}")
    return a if a is not None else b


def _n_ints(value: Any, n: int, what: str) -> list[int]:
    if value is None:
        return [1] * n
    values = [int(value)] if isinstance(value, int) else [int(v) for v in value]
    if len(values) == 1:
        values = values * n
    if len(values) != n or min(values) < 1:
        raise ValueError(f"{what} must be {n} positive ints (or one), got {list(values)}")
    return values


@export("nn.conv1d")
def conv1d(
    value: Any = None,
    filters: Any = None,
    stride: Any = None,
    padding: Any = None,
    use_cudnn_on_gpu: Any = None,
    data_format: str | None = None,
    name: str | None = None,
    input: Any = None,
    dilations: Any = None,
) -> Tensor:
    """1-D convolution of a 3-D `value` with a `[width, in_channels, out_channels]` filter
    (TF1 `tf.nn.conv1d`), computed as a Conv2D over a height of 1.

    Args:
      value: `[batch, width, channels]` ("NWC", default) or `[batch, channels, width]` ("NCW");
        `input` is its new name.
      filters: `[filter_width, in_channels, out_channels]`.
      stride: an int, or a list of 1 or 3 ints (batch and channel entries 1).
      padding: "SAME" or "VALID".
      use_cudnn_on_gpu: ignored.
      data_format: "NWC" or "NCW".
      name: the name scope.
      dilations: an int, or a list of 1 or 3 ints.

    Returns:
      A 3-D Tensor in `data_format` with `out_channels` channels.

    >>> conv1d(sl.ones([2, 10, 3]), sl.ones([4, 3, 5]), 2, "VALID").shape
    TensorShape([2, 4, 5])
    """
    value = _one_of(value, input, "value and input (conv1d)")
    data_format = data_format or "NWC"
    if data_format not in ("NWC", "NHWC", "NCW", "NCHW"):
        raise ValueError(f"conv1d: data_format must be 'NWC' or 'NCW', got {data_format!r}")
    channels_first = data_format in ("NCW", "NCHW")
    spatial = 2 if channels_first else 1
    fmt = "NCHW" if channels_first else "NHWC"

    def as_four(v: Any, what: str) -> list[int]:
        """An int, or 1 or 3 ints in data_format order, as Conv2D's 4-list (height 1)."""
        values = [int(v)] if isinstance(v, int) else [int(x) for x in v]
        if len(values) == 3:
            values = [values[2 if channels_first else 1]]
        if len(values) != 1:
            raise ValueError(f"conv1d: {what} must be an int or a list of 1 or 3 ints, got {v}")
        return [1, 1, 1, values[0]] if channels_first else [1, 1, values[0], 1]

    if stride is None or padding is None:
        raise ValueError("conv1d needs stride and padding")
    strides = as_four(stride, "stride")
    dilation = as_four(1 if dilations is None else dilations, "dilations")
    with graph_lib.name_scope(name, "conv1d", [value, filters]) as scope:
        value = convert_to_tensor(value, name="value")
        filters = convert_to_tensor(filters, name="filters")
        if value.shape.rank not in (None, 3):
            raise ValueError(f"conv1d: value must be 3-D ({data_format}), got shape {value.shape}")
        if filters.shape.rank not in (None, 3):
            raise ValueError(
                f"conv1d: filters must be 3-D [width, in_channels, out_channels], got shape "
                f"{filters.shape}"
            )
        x = array_ops.expand_dims(value, spatial)
        w = array_ops.expand_dims(filters, 0)
        y = conv2d(x, w, strides, padding, data_format=fmt, dilations=dilation)
        return array_ops.squeeze(y, [spatial], name=scope)


@export("nn.atrous_conv2d")
def atrous_conv2d(
    value: Any, filters: Any, rate: int, padding: str, name: str | None = None
) -> Tensor:
    """Atrous (dilated) 2-D convolution, channels last (TF1 `tf.nn.atrous_conv2d`): a Conv2D
    with stride 1 and the filter dilated by `rate` in height and width.

    Raises:
      ValueError: `rate` < 1, or `padding` not "SAME"/"VALID".
    """
    if int(rate) < 1:
        raise ValueError(f"atrous_conv2d: rate {rate} cannot be less than one")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"atrous_conv2d: padding must be 'SAME' or 'VALID', got {padding!r}")
    with graph_lib.name_scope(name, "atrous_conv2d", [value, filters]) as scope:
        return conv2d(
            value, filters, [1, 1, 1, 1], padding, dilations=[1, rate, rate, 1], name=scope
        )


@export("nn.convolution")
def convolution(
    input: Any,
    filter: Any = None,
    padding: Any = None,
    strides: Any = None,
    dilation_rate: Any = None,
    name: str | None = None,
    data_format: str | None = None,
    filters: Any = None,
    dilations: Any = None,
) -> Tensor:
    """N-D convolution for N = 1 or 2 spatial dimensions, picked by the input's rank (TF1
    `tf.nn.convolution`).

    Args:
      input: `[batch, spatial..., channels]`, or channels second when `data_format` starts
        with "NC".
      filter: `[spatial..., in_channels, out_channels]` (`filters` is an alias).
      padding: "SAME" or "VALID".
      strides: N ints (default 1s).
      dilation_rate: N ints (default 1s; `dilations` is an alias).
      name: the name scope.
      data_format: "NWC"/"NCW" (N=1) or "NHWC"/"NCHW" (N=2), channels last by default.

    Raises:
      ValueError: unknown rank, an unsupported rank, a bad padding, or strides and
        dilation_rate both > 1 (as TF1).
    """
    filter = _one_of(filter, filters, "filter and filters (convolution)")
    dilation_rate = _one_of(dilation_rate, dilations, "dilation_rate and dilations (convolution)")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"convolution: padding must be 'SAME' or 'VALID', got {padding!r}")
    input = convert_to_tensor(input, name="input")
    filter = convert_to_tensor(filter, name="filter")
    rank = input.shape.rank if input.shape.rank is not None else filter.shape.rank
    if rank is None:
        raise ValueError("convolution: the rank of input or filter must be known")
    n = rank - 2
    if n not in (1, 2):
        raise NotImplementedError(
            f"convolution: {n} spatial dimensions (input shape {input.shape}) is not supported; "
            "1 and 2 are"
        )
    strides = _n_ints(strides, n, "convolution: strides")
    dilation_rate = _n_ints(dilation_rate, n, "convolution: dilation_rate")
    if max(strides) > 1 and max(dilation_rate) > 1:
        raise ValueError(
            f"convolution: strides {strides} > 1 are not supported in conjunction with "
            f"dilation_rate {dilation_rate} > 1"
        )
    channels_first = data_format is not None and data_format.startswith("NC")
    with graph_lib.name_scope(name, "convolution", [input, filter]) as scope:
        if n == 1:
            return conv1d(
                input,
                filter,
                strides,
                padding,
                data_format="NCW" if channels_first else "NWC",
                dilations=dilation_rate,
                name=scope,
            )
        fmt = "NCHW" if channels_first else "NHWC"
        return conv2d(
            input, filter, strides, padding, data_format=fmt, dilations=dilation_rate, name=scope
        )
