"""ImageProjectiveTransformV3 (TF's op behind `tf.raw_ops.ImageProjectiveTransformV3` and
Keras's `ops.image.affine_transform`) and its gradient, on `[batch, height, width, channels]`.

Each image has a transform `[a0, a1, a2, b0, b1, b2, c0, c1]` that maps an output point
(x, y) (column, row) to the input point it samples:

    k = c0 * x + c1 * y + 1
    x_in = (a0 * x + a1 * y + a2) / k,    y_in = (b0 * x + b1 * y + b2) / k

The input is sampled there by `interpolation` ("NEAREST": the nearest pixel; "BILINEAR": the
four around it), with `jax.scipy.ndimage.map_coordinates` (order 0 or 1), as Keras 3's JAX
backend samples; a point outside the image is read by `fill_mode`: "CONSTANT" (`fill_value`),
"NEAREST" (the edge pixel), "WRAP" (periodic), "REFLECT" (d c b a | a b c d | d c b a) or
"MIRROR" (d c b | a b c d | c b a). One transform row (`[1, 8]`) serves the whole batch.

The gradient with respect to the images is the transpose of that linear sampling (`jax.vjp` of
the kernel in `ImageProjectiveTransformV3Grad`); the transforms, the output shape and the fill
value get none, as in TF.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.array_util import host_ints, register_array_op
from sluice.framework.ops.core.shape_rules import constant_value, require_rank

INTERPOLATIONS = {"NEAREST": 0, "BILINEAR": 1}
FILL_MODES = {"CONSTANT", "NEAREST", "WRAP", "REFLECT", "MIRROR"}


def _sample(images, transforms, out_hw, interpolation: str, fill_mode: str, fill_value):
    """The transformed images (the maths of the module docstring), in the images' dtype."""
    batch = images.shape[0]
    height, width = out_hw
    work = images.dtype if jnp.issubdtype(images.dtype, jnp.floating) else jnp.float32
    transforms = jnp.broadcast_to(transforms.astype(work), (batch, 8))
    y, x = jnp.meshgrid(
        jnp.arange(height, dtype=work), jnp.arange(width, dtype=work), indexing="ij"
    )
    a0, a1, a2, b0, b1, b2, c0, c1 = (transforms[:, i, None, None] for i in range(8))
    k = c0 * x + c1 * y + 1.0
    x_in = (a0 * x + a1 * y + a2) / k
    y_in = (b0 * x + b1 * y + b2) / k
    order = INTERPOLATIONS[interpolation]
    mode = fill_mode.lower()

    def one_channel(image, rows, cols):  # image [h, w]; cval must be static: 0 here
        return jax.scipy.ndimage.map_coordinates(image, [rows, cols], order=order, mode=mode)

    per_channel = jax.vmap(one_channel, in_axes=(2, None, None), out_axes=2)
    values = jax.vmap(per_channel)(images.astype(work), y_in, x_in)
    if mode == "constant":  # each neighbour outside the image reads fill_value, by its weight
        inside = jax.vmap(one_channel, in_axes=(None, 0, 0))(
            jnp.ones(images.shape[1:3], work), y_in, x_in
        )
        values = values + (1 - inside)[..., None] * jnp.asarray(fill_value, work)
    if jnp.issubdtype(images.dtype, jnp.integer):
        values = jnp.round(values)
    return values.astype(images.dtype)


def _check_attrs(op) -> None:
    interpolation, fill_mode = op.get_attr("interpolation"), op.get_attr("fill_mode")
    if interpolation not in INTERPOLATIONS:
        raise ValueError(
            f"{op.type}: interpolation must be one of {sorted(INTERPOLATIONS)}, got "
            f"{interpolation!r}"
        )
    if fill_mode not in FILL_MODES:
        raise ValueError(
            f"{op.type}: fill_mode must be one of {sorted(FILL_MODES)}, got {fill_mode!r}"
        )


def _check_transforms(op, images: Tensor, transforms: Tensor) -> None:
    require_rank(transforms, 2, f"{op.type}'s transforms ([batch or 1, 8])")
    if not dtypes.is_floating(transforms.dtype):
        raise TypeError(f"{op.type}: transforms must be float32, got {transforms.dtype.name}")
    rows, width = transforms.shape.dims
    if width not in (None, 8):
        raise ValueError(f"{op.type}: transforms must have 8 columns, got {transforms.shape}")
    batch = images.shape.dims[0] if images.shape.rank else None
    if rows not in (None, 1) and batch is not None and rows != batch:
        raise ValueError(
            f"{op.type}: transforms must have 1 row or one per image ({batch}), got "
            f"shape {transforms.shape}"
        )


def _output_hw(op, output_shape: Tensor) -> list:
    if output_shape.dtype != dtypes.int32:
        raise TypeError(f"{op.type}: output_shape must be int32, got {output_shape.dtype.name}")
    value = constant_value(output_shape)
    if value is None:
        return [None, None]
    if len(value) != 2 or any(v <= 0 for v in value):
        raise ValueError(f"{op.type}: output_shape must be 2 positive ints, got {list(value)}")
    return [int(v) for v in value]


def _transform_infer(op) -> list:
    images, transforms, output_shape, fill_value = op.inputs
    require_rank(images, 4, f"{op.type}'s images ([batch, height, width, channels])")
    if not (dtypes.is_floating(images.dtype) or dtypes.is_integer(images.dtype)):
        raise TypeError(f"{op.type}: images must be real numbers, got {images.dtype.name}")
    _check_transforms(op, images, transforms)
    _check_attrs(op)
    require_rank(fill_value, 0, f"{op.type}'s fill_value")
    batch, _, _, channels = images.shape.dims
    return [(images.dtype, TensorShape([batch, *_output_hw(op, output_shape), channels]))]


def _transform_kernel(images, transforms, output_shape, fill_value, *, interpolation, fill_mode):
    out_hw = tuple(host_ints(output_shape, "ImageProjectiveTransformV3's output_shape"))
    return _sample(images, transforms, out_hw, interpolation, fill_mode, fill_value)


register_array_op(
    "ImageProjectiveTransformV3", infer=_transform_infer, kernel=_transform_kernel, host_inputs=(2,)
)


def image_projective_transform(
    images: Any,
    transforms: Any,
    output_shape: Any = None,
    interpolation: str = "BILINEAR",
    fill_mode: str = "CONSTANT",
    fill_value: float = 0.0,
    name: str | None = None,
) -> Tensor:
    """`images` ([batch, height, width, channels]) sampled at the points `transforms` maps the
    output pixels to (see the module docstring); `output_shape` [height, width] defaults to the
    images' (static) size."""
    images = core_ops.convert_to_tensor(images, name="images")
    transforms = core_ops.convert_to_tensor(transforms, dtype=dtypes.float32, name="transforms")
    if output_shape is None:
        output_shape = images.shape.as_list()[1:3] if images.shape.rank == 4 else None
        if output_shape is None or None in output_shape:
            raise ValueError(
                "image_projective_transform: the images' height and width must be static when "
                f"output_shape is not given, got shape {images.shape}."
            )
    output_shape = core_ops.convert_to_tensor(output_shape, dtype=dtypes.int32)
    fill = core_ops.convert_to_tensor(fill_value, dtype=dtypes.float32)
    attrs = {"interpolation": interpolation.upper(), "fill_mode": fill_mode.upper()}
    return core_ops.apply_op(
        "ImageProjectiveTransformV3", [images, transforms, output_shape, fill], attrs, name
    ).outputs[0]


# -- the gradient: the transposed sampling --------------------------------------------------------
def _grad_infer(op) -> list:
    grads, images, transforms, _, _ = op.inputs
    require_rank(grads, 4, f"{op.type}'s grads")
    _check_attrs(op)
    return [(images.dtype, images.shape)]


def _grad_kernel(grads, images, transforms, output_shape, fill_value, *, interpolation, fill_mode):
    out_hw = tuple(grads.shape[1:3])

    def forward(x):
        return _sample(x, transforms, out_hw, interpolation, fill_mode, fill_value)

    _, pullback = jax.vjp(forward, images)
    return pullback(grads.astype(images.dtype))[0]


register_array_op("ImageProjectiveTransformV3Grad", infer=_grad_infer, kernel=_grad_kernel)
not_differentiable("ImageProjectiveTransformV3Grad")


@register_gradient("ImageProjectiveTransformV3")
def _transform_grad(op, grad):
    images = op.inputs[0]
    if not dtypes.is_floating(images.dtype):
        return [None, None, None, None]
    attrs = {k: op.get_attr(k) for k in ("interpolation", "fill_mode")}
    inputs = [grad, *op.inputs]
    d_images = core_ops.apply_op("ImageProjectiveTransformV3Grad", inputs, attrs).outputs[0]
    return [d_images, None, None, None]
