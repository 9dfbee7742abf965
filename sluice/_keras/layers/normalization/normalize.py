"""The normalization both BatchNormalization and LayerNormalization end with."""

from __future__ import annotations

from typing import Any

from sluice.framework.ops.array import array_ops
from sluice.framework.ops.math import unary_ops


def _normalize(layer: Any, centered: Any, var: Any) -> Any:
    """`centered / sqrt(var)`, scaled by the layer's gamma and shifted by its beta (each when
    it has one), the parameters shaped to broadcast over its normalised axes."""
    inv = unary_ops.rsqrt(var)
    if layer.gamma is not None:
        inv = inv * _broadcast(layer, layer.gamma.value())
    y = centered * inv
    if layer.beta is not None:
        y = y + _broadcast(layer, layer.beta.value())
    return y


def _broadcast(layer: Any, param: Any) -> Any:
    """A parameter over `layer._axes` shaped to broadcast against the inputs."""
    axes, rank = layer._axes, layer._rank
    if axes == list(range(rank - len(axes), rank)):
        return param  # trailing axes: broadcasting lines it up already
    shape = [1] * rank
    for i, a in enumerate(axes):
        shape[a] = param.shape[i]
    return array_ops.reshape(param, shape)
