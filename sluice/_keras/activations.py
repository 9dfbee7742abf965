"""Keras 3 activation functions on graph tensors, and `get(name)`.

>>> layer = sl.layers.Dense(4, activation="relu")
>>> gelu = sl.layers.activations.get("gelu")
>>> np.round(sl.Session().run(gelu(sl.constant([-1.0, 0.0, 2.0]))), 3)
array([-0.159,  0.   ,  1.954], dtype=float32)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from sluice._export import export
from sluice._keras.saving import families, serialization
from sluice.framework.ops.array import fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, unary_ops
from sluice.framework.ops.nn import nn_ops


def _const(x: Any, value: float) -> Any:
    return core_ops.convert_to_tensor(value, dtype=x.dtype)


@export("layers.activations.linear", "activations.linear")
def linear(x: Any) -> Any:
    return x


@export("layers.activations.relu", "activations.relu")
def relu(
    x: Any, negative_slope: float = 0.0, max_value: float | None = None, threshold: float = 0.0
) -> Any:
    """max(x, 0), or with Keras's arguments: `x` above `threshold` (else 0, or
    `negative_slope * (x - threshold)`), capped at `max_value`."""
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return nn_ops.relu(x)
    x = core_ops.convert_to_tensor(x)
    if negative_slope != 0.0 and max_value is None and threshold == 0.0:
        return nn_ops.leaky_relu(x, alpha=negative_slope)
    th = _const(x, threshold)
    y = gather_ops.where(math_ops.greater(x, th), x, fill_ops.zeros_like(x))
    if max_value is not None:
        y = math_ops.minimum(y, _const(x, max_value))
    if negative_slope != 0.0:
        y = y - _const(x, negative_slope) * nn_ops.relu(th - x)
    return y


@export("layers.activations.relu6", "activations.relu6")
def relu6(x: Any) -> Any:
    return nn_ops.relu6(x)


@export("layers.activations.leaky_relu", "activations.leaky_relu")
def leaky_relu(x: Any, negative_slope: float = 0.2) -> Any:
    return nn_ops.leaky_relu(x, alpha=negative_slope)


@export("layers.activations.elu", "activations.elu")
def elu(x: Any, alpha: float = 1.0) -> Any:
    y = nn_ops.elu(x)
    if alpha == 1.0:
        return y
    return gather_ops.where(math_ops.greater(x, _const(x, 0.0)), x, _const(x, alpha) * y)


@export("layers.activations.selu", "activations.selu")
def selu(x: Any) -> Any:
    return nn_ops.selu(x)


@export("layers.activations.sigmoid", "activations.sigmoid")
def sigmoid(x: Any) -> Any:
    return unary_ops.sigmoid(x)


@export("layers.activations.hard_sigmoid", "activations.hard_sigmoid")
def hard_sigmoid(x: Any) -> Any:
    """relu6(x + 3) / 6 (Keras 3's definition)."""
    return nn_ops.relu6(x + _const(x, 3.0)) / _const(x, 6.0)


@export("layers.activations.tanh", "activations.tanh")
def tanh(x: Any) -> Any:
    return unary_ops.tanh(x)


@export("layers.activations.softplus", "activations.softplus")
def softplus(x: Any) -> Any:
    return nn_ops.softplus(x)


@export("layers.activations.softsign", "activations.softsign")
def softsign(x: Any) -> Any:
    return nn_ops.softsign(x)


@export(
    "layers.activations.silu",
    "layers.activations.swish",
    "activations.silu",
    "activations.swish",
)
def silu(x: Any) -> Any:
    """x * sigmoid(x)."""
    return x * unary_ops.sigmoid(x)


swish = silu


@export("layers.activations.gelu", "activations.gelu")
def gelu(x: Any, approximate: bool = False) -> Any:
    """x * Phi(x) with the normal CDF (exact), or its tanh approximation."""
    half = _const(x, 0.5)
    if approximate:
        inner = _const(x, math.sqrt(2.0 / math.pi)) * (x + _const(x, 0.044715) * x * x * x)
        return half * x * (_const(x, 1.0) + unary_ops.tanh(inner))
    return half * x * (_const(x, 1.0) + unary_ops.erf(x / _const(x, math.sqrt(2.0))))


@export("layers.activations.mish", "activations.mish")
def mish(x: Any) -> Any:
    return x * unary_ops.tanh(nn_ops.softplus(x))


@export("layers.activations.exponential", "activations.exponential")
def exponential(x: Any) -> Any:
    return unary_ops.exp(x)


@export("layers.activations.softmax", "activations.softmax")
def softmax(x: Any, axis: int = -1) -> Any:
    return nn_ops.softmax(x, axis=axis)


@export("layers.activations.log_softmax", "activations.log_softmax")
def log_softmax(x: Any, axis: int = -1) -> Any:
    return nn_ops.log_softmax(x, axis=axis)


FAMILY = families.Family(
    "activation function",
    "keras.activations",
    aliases={
        f.__name__: f
        for f in (
            linear, relu, relu6, leaky_relu, elu, selu, sigmoid, hard_sigmoid, tanh, softplus,
            softsign, silu, gelu, mish, exponential, softmax, log_softmax,
        )
    }
    | {"swish": silu},
    instantiate=False,  # a class is a callable like any other (Keras)
)  # fmt: skip
_BY_NAME = FAMILY.names


@export("layers.activations.get", "activations.get")
def get(identifier: Any) -> Callable:
    """An activation from a name ("relu", or the name a custom function is registered under
    with `sl.saving.register_keras_serializable`), a config dict (`deserialize`), a callable
    (returned as is) or None (`linear`).

    Raises:
      ValueError: an unknown name, or anything else.
    """
    if identifier is None:
        return linear
    if isinstance(identifier, dict):
        return deserialize(identifier)
    return FAMILY.get(identifier)


@export("layers.activations.serialize", "activations.serialize")
def serialize(activation: Callable) -> str:
    """The name of an activation (what `get` takes back): its own name, or for a custom
    function the name it is registered under."""
    name = getattr(activation, "__name__", None)
    if name is None or _BY_NAME.get(name) is not activation:
        return serialization.get_registered_name(activation) or repr(activation)
    return name


@export("activations.deserialize")
def deserialize(config: Any, custom_objects: dict | None = None) -> Callable:
    """The activation a `serialize` result names: a name, or a function or object config as
    `sl.saving.serialize_keras_object` writes it (looked up in `custom_objects`, the registry,
    then Keras's activations)."""
    if isinstance(config, str):
        if custom_objects and config in custom_objects:
            return custom_objects[config]
        return get(config)
    if isinstance(config, dict) and config.get("class_name") == "function":
        name = config.get("config")
        if (
            isinstance(name, str)
            and name in _BY_NAME
            and not (custom_objects and name in custom_objects)
        ):
            return _BY_NAME[name]
    return serialization.deserialize_keras_object(config, custom_objects)
