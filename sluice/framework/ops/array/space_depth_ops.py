"""SpaceToDepth and DepthToSpace (NHWC): move `block_size x block_size` blocks of pixels into the
channels and back. Each is the other's gradient, as in TF1.

>>> x = sl.reshape(sl.range(4.0), [1, 2, 2, 1])
>>> sl.Session().run(sl.space_to_depth(x, 2)).tolist()
[[[[0.0, 1.0, 2.0, 3.0]]]]
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.shape_rules import require_rank


def _check_block(op) -> int:
    block = op.get_attr("block_size")
    if block < 2:
        raise ValueError(f"block_size must be at least 2, got {block}")
    require_rank(op.inputs[0], 4, "input")
    return block


def _times(d, k):
    return None if d is None else d * k


def _space_to_depth_infer(op) -> list:
    x = op.inputs[0]
    block = _check_block(op)
    if x.shape.rank is None:
        return [(x.dtype, TensorShape([None] * 4))]
    b, h, w, c = x.shape.dims
    for d, what in ((h, "height"), (w, "width")):
        if d is not None and d % block:
            raise ValueError(
                f"the input's {what} ({d}) must be divisible by block_size "
                f"({block}), input shape {x.shape}"
            )
    h, w = (None if d is None else d // block for d in (h, w))
    return [(x.dtype, TensorShape([b, h, w, _times(c, block * block)]))]


def _space_to_depth_kernel(x, *, block_size, **_):
    b, h, w, c = x.shape
    k = block_size
    blocks = x.reshape(b, h // k, k, w // k, k, c).transpose(0, 1, 3, 2, 4, 5)
    return blocks.reshape(b, h // k, w // k, k * k * c)


register_op("SpaceToDepth", infer=_space_to_depth_infer, kernel=_space_to_depth_kernel)


@register_gradient("SpaceToDepth")
def _space_to_depth_grad(op, grad):
    return [depth_to_space(grad, op.get_attr("block_size"))]


def _depth_to_space_infer(op) -> list:
    x = op.inputs[0]
    block = _check_block(op)
    if x.shape.rank is None:
        return [(x.dtype, TensorShape([None] * 4))]
    b, h, w, c = x.shape.dims
    if c is not None and c % (block * block):
        raise ValueError(
            f"the input's depth ({c}) must be divisible by block_size squared "
            f"({block * block}), input shape {x.shape}"
        )
    depth = None if c is None else c // (block * block)
    return [(x.dtype, TensorShape([b, _times(h, block), _times(w, block), depth]))]


def _depth_to_space_kernel(x, *, block_size, **_):
    b, h, w, c = x.shape
    k = block_size
    pixels = x.reshape(b, h, w, k, k, c // (k * k)).transpose(0, 1, 3, 2, 4, 5)
    return pixels.reshape(b, h * k, w * k, c // (k * k))


register_op("DepthToSpace", infer=_depth_to_space_infer, kernel=_depth_to_space_kernel)


@register_gradient("DepthToSpace")
def _depth_to_space_grad(op, grad):
    return [space_to_depth(grad, op.get_attr("block_size"))]


def _apply(op_type: str, input: Any, block_size: int, name, data_format: str) -> Tensor:
    if data_format != "NHWC":
        raise NotImplementedError(
            f"{op_type}: only data_format='NHWC' is supported, got {data_format!r}"
        )
    x = core_ops.convert_to_tensor(input)
    return core_ops.apply_op(op_type, [x], {"block_size": int(block_size)}, name).outputs[0]


@export("space_to_depth")
def space_to_depth(
    input: Any, block_size: int, name: str | None = None, data_format: str = "NHWC"
) -> Tensor:
    """Each `block_size x block_size` block of pixels moved into the channels: `[b, h, w, c]`
    becomes `[b, h / block_size, w / block_size, c * block_size**2]` (TF1
    `tf.space_to_depth`)."""
    return _apply("SpaceToDepth", input, block_size, name, data_format)


@export("depth_to_space")
def depth_to_space(
    input: Any, block_size: int, name: str | None = None, data_format: str = "NHWC"
) -> Tensor:
    """The inverse of `space_to_depth`: `[b, h, w, c]` becomes `[b, h * block_size,
    w * block_size, c / block_size**2]` (TF1 `tf.depth_to_space`)."""
    return _apply("DepthToSpace", input, block_size, name, data_format)
