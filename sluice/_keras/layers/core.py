"""Core layers: Dense, Activation, Dropout, Flatten, Reshape, Lambda (Keras 3 arguments)."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers import activations, initializers, regularizers
from sluice._keras.layers.base import Layer
from sluice._keras.layers.tracking import shape_tuple
from sluice._keras.saving import serialization
from sluice._tf1.cells import nest
from sluice.framework.ir.graph import Graph
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import matmul_ops
from sluice.framework.ops.nn import nn_ops


def _check_no_constraint(**constraints: Any) -> None:
    given = [k for k, v in constraints.items() if v is not None]
    if given:
        raise NotImplementedError(f"Weight constraints are not supported ({', '.join(given)}).")


@export("layers.Dense")
class Dense(Layer):
    """`activation(inputs @ kernel + bias)`, over the last axis of inputs of any rank >= 2.

    Weights: `kernel` [input_dim, units], `bias` [units].

    Args:
      units: the size of the last axis of the output.
      activation: a name ("relu") or function; None is linear.
      use_bias: whether to add `bias`.
      kernel_initializer, bias_initializer: initializers (names or objects).
      kernel_regularizer, bias_regularizer: add a penalty on the weight to the training loss.
      activity_regularizer: adds a penalty on the outputs to the training loss.
      kernel_constraint, bias_constraint, lora_rank: accepted for Keras signatures; must be None.
      **kwargs: base Layer arguments (name, dtype, trainable, input_shape).

    >>> y = Dense(4, activation="relu")(sl.Input((8,)))
    >>> y.shape
    TensorShape([None, 4])
    """

    def __init__(
        self,
        units: int,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        lora_rank: int | None = None,
        **kwargs: Any,
    ):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        _check_no_constraint(kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
        if lora_rank is not None:
            raise NotImplementedError("lora_rank is not supported.")
        if int(units) <= 0:
            raise ValueError(
                f"Received an invalid value for `units`, expected a positive integer, got {units}."
            )
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.supports_masking = True

    def build(self, input_shape: tuple) -> None:
        input_dim = input_shape[-1] if input_shape else None
        if input_dim is None:
            raise ValueError(
                f"Dense {self.name!r}: the last dimension of the inputs must be known, got "
                f"input shape {input_shape}."
            )
        self.kernel = self.add_weight(
            shape=(input_dim, self.units),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            name="kernel",
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(self.units,),
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                name="bias",
            )

    def call(self, inputs: Any) -> Any:
        x = matmul_ops.matmul(inputs, self.kernel)
        if self.bias is not None:
            x = nn_ops.bias_add(x, self.bias)
        return self.activation(x)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "units": self.units,
            "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
        }


@export("layers.Activation")
class Activation(Layer):
    """Applies `activation` (a name or a function) elementwise.

    >>> logits = sl.constant([[1.0, 1.0], [0.0, np.log(3.0)]])
    >>> y = Activation("softmax")(logits)
    >>> np.round(sl.Session().run(y), 6)
    array([[0.5 , 0.5 ],
           [0.25, 0.75]], dtype=float32)
    """

    def __init__(self, activation: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)
        self.supports_masking = True

    def call(self, inputs: Any) -> Any:
        return self.activation(inputs)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


@export("layers.Dropout")
class Dropout(Layer):
    """In training, zeroes each input element with probability `rate` and scales the others by
    1 / (1 - rate); in inference, the identity. Every training step draws a new choice, from a
    sequence fixed by the seeds (the op seed `seed` and the graph seed).

    Args:
      rate: the fraction to drop, in [0, 1).
      noise_shape: the shape of the keep/drop choices, broadcast over the inputs (None entries
        are the inputs' dims): [batch, 1, features] drops the same features at every step.
      seed: the op seed.
    """

    def __init__(
        self, rate: float, noise_shape: Any = None, seed: int | None = None, **kwargs: Any
    ):
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise ValueError(
                "Invalid value received for argument `rate`. Expected a float in [0, 1),"
                f" got {rate}."
            )
        self.rate = float(rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed
        self.supports_masking = True

    def call(self, inputs: Any, training: bool = False) -> Any:
        if not training or self.rate == 0:
            return inputs
        noise_shape = None
        if self.noise_shape is not None:
            dynamic = fill_ops.shape(inputs)
            noise_shape = join_ops.stack(
                [dynamic[i] if d is None else np.int32(d) for i, d in enumerate(self.noise_shape)]
            )
        return nn_ops.dropout(inputs, rate=self.rate, noise_shape=noise_shape, seed=self.seed)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "rate": self.rate,
            "noise_shape": self.noise_shape,
            "seed": self.seed,
        }


def _static_product(dims: Any) -> int | None:
    return None if any(d is None for d in dims) else int(np.prod(dims, dtype=np.int64))


@export("layers.Flatten")
class Flatten(Layer):
    """[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]; channels_first inputs are first moved to
    channels last, as Keras does, so the order of features does not depend on the data format."""

    def __init__(self, data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format)

    def call(self, inputs: Any) -> Any:
        x = inputs
        rank = x.shape.rank
        if rank is None:
            raise ValueError(f"Flatten {self.name!r} needs inputs of known rank.")
        if self.data_format == "channels_first" and rank > 2:
            x = array_ops.transpose(x, [0] + list(range(2, rank)) + [1])
        features = _static_product(x.shape.as_list()[1:])
        if features is not None:
            return array_ops.reshape(x, [-1, features])
        return array_ops.reshape(x, join_ops.stack([fill_ops.shape(x)[0], np.int32(-1)]))

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return (input_shape[0], _static_product(input_shape[1:]))

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format}


@export("layers.Reshape")
class Reshape(Layer):
    """Reshapes each example to `target_shape` (without the batch; one entry may be -1).

    >>> y = Reshape((4, 3))(sl.Input((12,)))
    >>> y.shape
    TensorShape([None, 4, 3])
    """

    def __init__(self, target_shape: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1:
            raise ValueError(f"Reshape: at most one -1 in target_shape, got {self.target_shape}.")

    def call(self, inputs: Any) -> Any:
        static = self.compute_output_shape(tuple(inputs.shape.as_list()))
        if None not in static[1:]:
            return array_ops.reshape(inputs, [-1] + list(static[1:]))
        batch = fill_ops.shape(inputs)[0]
        return array_ops.reshape(
            inputs, join_ops.stack([batch] + [np.int32(d) for d in self.target_shape])
        )

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        target = list(self.target_shape)
        if -1 in target:
            known = _static_product(input_shape[1:])
            rest = int(np.prod([d for d in target if d != -1], dtype=np.int64))
            if known is None:
                target[target.index(-1)] = None
            elif rest == 0 or known % rest:
                raise ValueError(
                    f"Reshape {self.name!r}: cannot reshape input of shape {input_shape} "
                    f"to {self.target_shape}."
                )
            else:
                target[target.index(-1)] = known // rest
        else:
            known = _static_product(input_shape[1:])
            if known is not None and known != int(np.prod(target, dtype=np.int64)):
                raise ValueError(
                    f"Reshape {self.name!r}: the input has {known} elements per example "
                    f"(shape {input_shape}), target_shape {self.target_shape} has "
                    f"{int(np.prod(target))}."
                )
        return (input_shape[0],) + tuple(target)

    def get_config(self) -> dict:
        return {**super().get_config(), "target_shape": self.target_shape}


@export("layers.Lambda")
class Lambda(Layer):
    """Wraps graph ops as a layer: `function(inputs, **arguments)`, so that a functional model can
    replay them.

    Saving (Keras 3's format): a named function is saved by name, and must be registered with
    `sl.saving.register_keras_serializable()` or passed in `custom_objects` to load; a Python
    `lambda` is saved as bytecode, which loading refuses unless `safe_mode=False` is given (or
    `sl.config.enable_unsafe_deserialization()` was called), since loading it runs code from
    the file.

    >>> x = sl.Input((3,))
    >>> y = Lambda(lambda t: t * 2.0)(x)
    >>> sl.Model(x, y).predict(np.ones((1, 3)), verbose=0)
    array([[2., 2., 2.]], dtype=float32)
    """

    def __init__(
        self,
        function: Callable,
        output_shape: Any = None,
        mask: Any = None,
        arguments: dict | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: `function` must be callable, got {function!r}.")
        self.function = function
        self.output_shape = output_shape
        self.mask = mask
        self.arguments = dict(arguments or {})
        self.supports_masking = mask is not None

    def call(self, inputs: Any) -> Any:
        return self.function(inputs, **self.arguments)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def compute_output_shape(self, input_shape: Any) -> Any:
        """`output_shape` (a function of the input shape, or the shape without the batch), or
        the shape of `function`'s result on placeholders in a scratch graph."""
        if callable(self.output_shape):
            return self.output_shape(input_shape)
        nested = (
            isinstance(input_shape, list)
            and input_shape
            and isinstance(input_shape[0], (list, tuple))
        )
        if self.output_shape is not None:
            batch = input_shape[0][0] if nested else input_shape[0]
            return (batch,) + tuple(self.output_shape)
        shapes = [list(s) for s in input_shape] if nested else [list(input_shape)]
        with Graph().as_default():
            inputs = [core_ops.placeholder(self._dtype, s) for s in shapes]
            outputs = self.function(inputs if nested else inputs[0], **self.arguments)
        return nest.map_structure(shape_tuple, outputs)

    def get_config(self) -> dict:
        config = {**super().get_config(), "function": _function_config(self.function)}
        if self.output_shape is not None:
            config["output_shape"] = (
                _function_config(self.output_shape)
                if callable(self.output_shape) else list(self.output_shape)
            )  # fmt: skip
        if callable(self.mask):
            config["mask"] = _function_config(self.mask)
        elif self.mask is not None:
            raise ValueError(f"Lambda {self.name!r}: only a mask function can be saved.")
        config["arguments"] = serialization.serialize_keras_object(self.arguments)
        return config

    @classmethod
    def from_config(cls, config: dict) -> Lambda:
        """Rebuilds the layer; a Python lambda (bytecode) only outside safe mode."""
        config = dict(config)
        for key in ("function", "output_shape", "mask"):
            if isinstance(config.get(key), dict):
                config[key] = _function_from_config(config[key], key)
        config["arguments"] = serialization.deserialize_keras_object(config.get("arguments"))
        return cls(**config)


def _function_config(fn: Callable) -> Any:
    """A Lambda's function as Keras saves it: its name (a registered or built-in function), or
    {"class_name": "__lambda__", "config": {"code", "defaults", "closure"}}."""
    if isinstance(fn, types.FunctionType) and fn.__name__ == "<lambda>":
        return {"class_name": "__lambda__", "config": serialization.dump_function(fn)}
    return serialization.serialize_keras_object(fn)


def _function_from_config(config: dict, argument: str) -> Callable:
    if config.get("class_name") == "__lambda__":
        return serialization.load_function(
            config.get("config"),
            refusal=(
                f"The `{argument}` of this `Lambda` layer is a Python lambda. Deserializing it "
                "is unsafe. If you trust the source of the config artifact, you can override "
                "this error by passing `safe_mode=False` to the loading function (load_model, "
                "from_config), or calling `sl.config.enable_unsafe_deserialization()`."
            ),
        )
    fn = serialization.deserialize_keras_object(config)
    if not callable(fn):
        raise ValueError(f"Lambda: the `{argument}` in the config is not a function: {fn!r}.")
    return fn


def _data_format(data_format: str | None) -> str:
    data_format = data_format or "channels_last"
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(
            f"data_format must be 'channels_last' or 'channels_first', got {data_format!r}."
        )
    return data_format
