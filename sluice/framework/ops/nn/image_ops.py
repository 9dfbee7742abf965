"""Image resizing: ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic, ResizeArea and the
gradients of the first three (TF1 `tf.image.resize_*`), on `[batch, height, width, channels]`.

Every method maps output row y (column x likewise) to the input by TF1's coordinate rule:

    scale = (in - 1) / (out - 1)   if align_corners and out > 1,   else in / out
    source(y) = y * scale                      (legacy: TF1's default)
    source(y) = (y + 0.5) * scale - 0.5        (half_pixel_centers)

then mixes the input rows near source(y): bilinear takes floor/ceil (clamped) with the
fractional part as weight; nearest takes floor (round with align_corners, clamped); bicubic
takes four rows with Keys' cubic weights (a = -0.75 legacy, -0.5 half-pixel, the fraction
quantized to 1/1024 as TF's table does); area averages the rows the output cell
[y * scale, (y + 1) * scale) covers, weighted by overlap. Each method is thus a linear map per
axis, `out = W_h @ image @ W_w^T`, with weight matrices built on the host from the static sizes;
the gradient applies the transposed maps. Nearest keeps the image's dtype (a gather); the other
methods give float32, as TF1's kernels.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops, slicing_ops
from sluice.framework.ops.core.array_util import host_ints
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.shape_rules import constant_value, require_rank

_TABLE = 1024  # TF's bicubic weights come from a table of this many fractions


# -- the per-axis weight matrices -----------------------------------------------------------------
def _scale(in_size: int, out_size: int, align_corners: bool) -> float:
    if align_corners and out_size > 1:
        return (in_size - 1) / (out_size - 1)
    return in_size / out_size


def _source(out_size: int, scale: float, half_pixel: bool) -> np.ndarray:
    """Where each output index lands in input coordinates (float32, as TF's kernels)."""
    y = np.arange(out_size, dtype=np.float32)
    scale = np.float32(scale)
    return (y + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else y * scale


def _nearest_index(in_size, out_size, align_corners, half_pixel) -> np.ndarray:
    scale = np.float32(_scale(in_size, out_size, align_corners))
    y = np.arange(out_size, dtype=np.float32)
    where = (y + np.float32(0.5)) * scale if half_pixel else y * scale
    where = np.floor(where + np.float32(0.5)) if align_corners else np.floor(where)  # roundf
    return np.minimum(where.astype(np.int64), in_size - 1)


def _bilinear_weights(in_size, out_size, align_corners, half_pixel) -> np.ndarray:
    source = _source(out_size, _scale(in_size, out_size, align_corners), half_pixel)
    floor = np.floor(source)
    lower = np.maximum(floor, 0).astype(np.int64)
    upper = np.minimum(np.ceil(source), in_size - 1).astype(np.int64)
    lerp = (source - floor).astype(np.float64)
    w = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    np.add.at(w, (rows, lower), 1.0 - lerp)
    np.add.at(w, (rows, upper), lerp)
    return w


def _cubic(a: float, x: np.ndarray) -> np.ndarray:
    """Keys' cubic convolution kernel at |x| <= 2."""
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x <= 1, near, far)


def _bicubic_weights(in_size, out_size, align_corners, half_pixel) -> np.ndarray:
    a = -0.5 if half_pixel else -0.75
    source = _source(out_size, _scale(in_size, out_size, align_corners), half_pixel)
    start = np.floor(source).astype(np.int64)
    fraction = np.round((source - start) * _TABLE) / _TABLE  # lrintf: half to even
    w = np.zeros((out_size, in_size))
    for y in range(out_size):
        taps = [start[y] + k for k in (-1, 0, 1, 2)]
        weights = _cubic(
            a, np.array([1 + fraction[y], fraction[y], 1 - fraction[y], 2 - fraction[y]])
        )
        if half_pixel:  # taps outside the image drop out and the rest are renormalized
            inside = np.array([0 <= t < in_size for t in taps])
            weights = np.where(inside, weights, 0.0)
            weights = weights / weights.sum()
        for t, weight in zip(taps, weights):
            w[y, min(max(t, 0), in_size - 1)] += weight
    return w


def _area_weights(in_size, out_size, align_corners, half_pixel) -> np.ndarray:
    del half_pixel  # ResizeArea has no half-pixel mode
    scale = _scale(in_size, out_size, align_corners)
    w = np.zeros((out_size, in_size))
    for y in range(out_size):
        low, high = y * scale, (y + 1) * scale
        for i in range(int(math.floor(low)), int(math.ceil(high))):
            overlap = min(i + 1, high) - max(i, low)
            w[y, min(i, in_size - 1)] += overlap / scale
    return w


_WEIGHTS = {
    "ResizeBilinear": _bilinear_weights,
    "ResizeBicubic": _bicubic_weights,
    "ResizeArea": _area_weights,
}


@functools.lru_cache(maxsize=256)
def _matrices(op_type, in_hw, out_hw, align_corners, half_pixel) -> tuple:
    weights = _WEIGHTS[op_type]
    return tuple(
        np.asarray(weights(i, o, align_corners, half_pixel), np.float32)
        for i, o in zip(in_hw, out_hw)
    )


def _apply_maps(images, w_h, w_w):
    return jnp.einsum("yh,bhwc,xw->byxc", w_h, images, w_w, precision=jax.lax.Precision.HIGHEST)


# -- shape rules ----------------------------------------------------------------------------------
def _check_images(op, images: Tensor) -> None:
    require_rank(images, 4, f"{op.type}'s images ([batch, height, width, channels])")
    if not (dtypes.is_floating(images.dtype) or dtypes.is_integer(images.dtype)):
        raise TypeError(f"{op.type}: images must be real numbers, got {images.dtype.name}")


def _size_dims(op, size: Tensor) -> list:
    if size.dtype != dtypes.int32:
        raise TypeError(f"{op.type}: size must be int32, got {size.dtype.name}")
    require_rank(size, 1, f"{op.type}'s size")
    if size.shape[0] not in (None, 2):
        raise ValueError(
            f"{op.type}: size must have 2 elements [new_height, new_width], got shape {size.shape}"
        )
    value = constant_value(size)
    if value is None:
        return [None, None]
    if any(v <= 0 for v in value):
        raise ValueError(f"{op.type}: size must be positive, got {list(value)}")
    return [int(v) for v in value]


def _check_modes(op) -> None:
    if op.get_attr("align_corners") and op.get_attr("half_pixel_centers"):
        raise ValueError(f"{op.type}: align_corners and half_pixel_centers can not both be True")


def _resize_infer(op) -> list:
    images, size = op.inputs
    _check_images(op, images)
    _check_modes(op)
    batch, _, _, channels = images.shape.dims
    dtype = images.dtype if op.type == "ResizeNearestNeighbor" else dtypes.float32
    return [(dtype, TensorShape([batch, *_size_dims(op, size), channels]))]


def _resize_kernel(op_type):
    def kernel(images, size, *, align_corners, half_pixel_centers, **_):
        out_hw = host_ints(size, f"{op_type}'s size")
        in_hw = tuple(images.shape[1:3])
        w_h, w_w = _matrices(op_type, in_hw, out_hw, align_corners, half_pixel_centers)
        return _apply_maps(images.astype(jnp.float32), w_h, w_w)

    return kernel


def _nearest_kernel(images, size, *, align_corners, half_pixel_centers, **_):
    out_h, out_w = host_ints(size, "ResizeNearestNeighbor's size")
    rows = _nearest_index(images.shape[1], out_h, align_corners, half_pixel_centers)
    cols = _nearest_index(images.shape[2], out_w, align_corners, half_pixel_centers)
    return images[:, rows][:, :, cols]


for _op_type in _WEIGHTS:
    register_op(_op_type, infer=_resize_infer, kernel=_resize_kernel(_op_type), host_inputs=(1,))
register_op("ResizeNearestNeighbor", infer=_resize_infer, kernel=_nearest_kernel, host_inputs=(1,))
not_differentiable("ResizeArea")  # as in TF1


# -- gradients: the transposed maps ---------------------------------------------------------------
def _grad_infer(op) -> list:
    grads, original = op.inputs
    require_rank(grads, 4, f"{op.type}'s grads")
    _check_modes(op)
    if not dtypes.is_floating(original.dtype):
        raise TypeError(f"{op.type}: original_image must be floating, got {original.dtype.name}")
    return [(original.dtype, original.shape)]


def _grad_kernel(forward_type):
    def kernel(grads, original, *, align_corners, half_pixel_centers, **_):
        in_hw, out_hw = tuple(original.shape[1:3]), tuple(grads.shape[1:3])
        w_h, w_w = _matrices(forward_type, in_hw, out_hw, align_corners, half_pixel_centers)
        return _apply_maps(grads.astype(jnp.float32), w_h.T, w_w.T).astype(original.dtype)

    return kernel


for _forward in ("ResizeBilinear", "ResizeBicubic"):
    register_op(f"{_forward}Grad", infer=_grad_infer, kernel=_grad_kernel(_forward))
    not_differentiable(f"{_forward}Grad")


def _resize_grad(op, grad):
    attrs = {k: op.get_attr(k) for k in ("align_corners", "half_pixel_centers")}
    image = op.inputs[0]
    if not dtypes.is_floating(image.dtype):
        return [None, None]  # TF1: integer images get no gradient
    return [apply_op(f"{op.type}Grad", [grad, image], attrs).outputs[0], None]


register_gradient("ResizeBilinear")(_resize_grad)
register_gradient("ResizeBicubic")(_resize_grad)


def _nearest_grad_infer(op) -> list:
    grads, size = op.inputs
    require_rank(grads, 4, "ResizeNearestNeighborGrad's grads")
    batch, _, _, channels = grads.shape.dims
    return [(grads.dtype, TensorShape([batch, *_size_dims(op, size), channels]))]


def _nearest_grad_kernel(grads, size, *, align_corners, half_pixel_centers, **_):
    in_h, in_w = host_ints(size, "ResizeNearestNeighborGrad's size")
    rows = _nearest_index(in_h, grads.shape[1], align_corners, half_pixel_centers)
    cols = _nearest_index(in_w, grads.shape[2], align_corners, half_pixel_centers)
    summed_rows = jnp.zeros((grads.shape[0], in_h, grads.shape[2], grads.shape[3]), grads.dtype)
    summed_rows = summed_rows.at[:, rows].add(grads)
    out = jnp.zeros((grads.shape[0], in_h, in_w, grads.shape[3]), grads.dtype)
    return out.at[:, :, cols].add(summed_rows)


register_op(
    "ResizeNearestNeighborGrad",
    infer=_nearest_grad_infer,
    kernel=_nearest_grad_kernel,
    host_inputs=(1,),
)
not_differentiable("ResizeNearestNeighborGrad")


@register_gradient("ResizeNearestNeighbor")
def _nearest_grad(op, grad):
    image = op.inputs[0]
    if not dtypes.is_floating(image.dtype):
        return [None, None]
    height, width = image.shape.dims[1:3]
    if height is not None and width is not None:
        size = convert_to_tensor(np.int32([height, width]), name="size")
    else:
        size = slicing_ops.slice(fill_ops.shape(image), [1], [2])
    attrs = {k: op.get_attr(k) for k in ("align_corners", "half_pixel_centers")}
    return [apply_op("ResizeNearestNeighborGrad", [grad, size], attrs).outputs[0], None]


def resize(
    op_type: str,
    images: Any,
    size: Any,
    align_corners: bool = False,
    half_pixel_centers: bool = False,
    name: str | None = None,
) -> Tensor:
    """One resize op on a 4-D batch of images; `size` is `[new_height, new_width]` (int32)."""
    images = convert_to_tensor(images, name="images")
    size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
    attrs = {"align_corners": bool(align_corners), "half_pixel_centers": bool(half_pixel_centers)}
    return apply_op(op_type, [images, size], attrs, name).outputs[0]
