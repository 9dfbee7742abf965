"""CPU kernels for convolution and max pooling (REGISTER_KERNEL_BUILDER's idea).

XLA's CPU backend runs `conv_general_dilated` and `reduce_window` max-pool gradients far below
the machine's arithmetic speed. The same maths as slices and one matmul (im2col), and pooling as
a reshape and a max, runs several times faster there. Each kernel here is registered for the
"cpu" device type and falls back to the generic kernel for cases it does not cover;
tests/framework/ops/test_cpu_kernels.py checks that each equals the generic kernel.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax import lax

from sluice.framework.ir.registry import register_kernel
from sluice.framework.ops.nn import conv_ops, pool_ops


def _im2col_conv(x, w, *, strides, padding, explicit_paddings, dilations, data_format, **attrs):
    """Conv2D (NHWC, HWIO) as kh*kw shifted slices concatenated on channels and one matmul."""
    if data_format != "NHWC":
        return conv_ops._conv2d_kernel(
            x,
            w,
            strides=strides,
            padding=padding,
            explicit_paddings=explicit_paddings,
            dilations=dilations,
            data_format=data_format,
            **attrs,
        )
    n, h, width, c_in = x.shape
    kh, kw, _, c_out = w.shape
    (sh, sw), (dh, dw) = strides[1:3], dilations[1:3]
    window = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    if padding == "EXPLICIT":
        pads = [
            (explicit_paddings[2], explicit_paddings[3]),
            (explicit_paddings[4], explicit_paddings[5]),
        ]
    else:
        pads = lax.padtype_to_pads((h, width), window, (sh, sw), padding)
    x = jnp.pad(x, [(0, 0), tuple(pads[0]), tuple(pads[1]), (0, 0)])
    out_h = (x.shape[1] - window[0]) // sh + 1
    out_w = (x.shape[2] - window[1]) // sw + 1
    patches = [
        x[
            :,
            i * dh : i * dh + (out_h - 1) * sh + 1 : sh,
            j * dw : j * dw + (out_w - 1) * sw + 1 : sw,
            :,
        ]
        for i in range(kh)
        for j in range(kw)
    ]
    cols = jnp.concatenate(patches, axis=-1) if len(patches) > 1 else patches[0]
    out = cols.reshape(-1, kh * kw * c_in) @ w.reshape(kh * kw * c_in, c_out)
    return out.reshape(n, out_h, out_w, c_out)


def _tiles(x: Any, ksize: list, strides: list, padding: str, data_format: str) -> int | None:
    """The window size k when pooling is k x k tiles that cover x exactly, else None."""
    if data_format != "NHWC" or ksize != strides or ksize[0] != 1 or ksize[3] != 1:
        return None
    k = ksize[1]
    if ksize[2] != k or x.shape[1] % k or x.shape[2] % k:
        return None
    return k


def _max_pool(value, *, ksize, strides, padding, data_format="NHWC", **attrs):
    k = _tiles(value, ksize, strides, padding, data_format)
    if k is None:
        return pool_ops._max_pool_kernel(
            value, ksize=ksize, strides=strides, padding=padding, **attrs
        )
    n, h, w, c = value.shape
    return value.reshape(n, h // k, k, w // k, k, c).max(axis=(2, 4))


def _max_pool_grad(
    orig_input, orig_output, grad, *, ksize, strides, padding, data_format="NHWC", **attrs
):
    k = _tiles(orig_input, ksize, strides, padding, data_format)
    if k is None:
        return pool_ops._max_pool_grad_kernel(
            orig_input,
            orig_output,
            grad,
            ksize=ksize,
            strides=strides,
            padding=padding,
            data_format=data_format,
            **attrs,
        )
    n, h, w, c = orig_input.shape
    windows = orig_input.reshape(n, h // k, k, w // k, k, c).transpose(0, 1, 3, 5, 2, 4)
    first_max = jnp.argmax(windows.reshape(n, h // k, w // k, c, k * k), axis=-1)  # ties: first
    routed = jnp.where(jnp.arange(k * k) == first_max[..., None], grad[..., None], 0)
    routed = routed.astype(grad.dtype).reshape(n, h // k, w // k, c, k, k)
    return routed.transpose(0, 1, 4, 2, 5, 3).reshape(n, h, w, c)


register_kernel("Conv2D", "cpu", _im2col_conv)
register_kernel("Conv2DBackpropInput", "cpu", conv_ops.backprop_input_kernel(_im2col_conv))
register_kernel("Conv2DBackpropFilter", "cpu", conv_ops.backprop_filter_kernel(_im2col_conv))
register_kernel("MaxPool", "cpu", _max_pool)
register_kernel("MaxPoolGrad", "cpu", _max_pool_grad)
