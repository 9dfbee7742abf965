"""`Bidirectional`: a forward and a backward copy of an RNN layer over the same inputs."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.saving import serialization
from sluice._tf1.cells import nest
from sluice.framework.ops.array import array_ops, join_ops
from sluice.framework.ops.math import math_ops

_MERGE_MODES = ("sum", "mul", "concat", "ave", None)


def _copy(layer: Layer, **overrides: Any) -> Layer:
    """A new, unbuilt layer like `layer` with `overrides` (an RNN's cell copied too)."""
    if hasattr(layer, "unbuilt_copy"):
        return layer.unbuilt_copy(**overrides)
    return type(layer).from_config({**layer.get_config(), **overrides})


def _without_prefix(name: str, prefix: str) -> str:
    return name[len(prefix) :] if name.startswith(prefix) else name


@export("layers.Bidirectional")
class Bidirectional(Layer):
    """Runs a copy of `layer` forwards and another copy backwards over the same inputs, then
    merges their outputs (Keras 3's semantics).

    The copies are `forward_<name>` and `backward_<name>` (Keras's names), so their weights are
    `bidirectional/forward_lstm/lstm_cell/kernel`, .... With `return_sequences`, the backward
    outputs are flipped along time, so both directions are aligned with the inputs, and masked
    steps output zeros (Keras forces `zero_output_for_mask` then).

    Args:
      layer: an RNN layer (SimpleRNN, LSTM, GRU, or RNN with any cell); it is only copied.
      merge_mode: "concat" (default), "sum", "mul", "ave", or None (a list of both outputs).
      weights: must be None.
      backward_layer: the layer to run backwards, used as it is (default: a copy of `layer`
        with `go_backwards` flipped); its `go_backwards` must differ from `layer`'s and its
        `stateful`, `return_sequences` and `return_state` must be the same.

    Call arguments: as the wrapped layer's; the first half of `initial_state` goes to the
    forward layer, the second half to the backward one. With `return_state`, the outputs are
    [output(s), *forward states, *backward states].

    >>> x = sl.Input((10, 8))
    >>> y = Bidirectional(sl.layers.LSTM(32, return_sequences=True))(x)
    >>> y.shape                                                     # [batch, time, 64]
    TensorShape([None, 10, 64])
    """

    def __init__(
        self,
        layer: Any,
        merge_mode: str | None = "concat",
        weights: Any = None,
        backward_layer: Any = None,
        **kwargs: Any,
    ):
        if isinstance(layer, dict):
            layer = serialization.deserialize(layer)
        if isinstance(backward_layer, dict):
            backward_layer = serialization.deserialize(backward_layer)
        for what, value in (("layer", layer), ("backward_layer", backward_layer)):
            if value is not None and not (
                isinstance(value, Layer) and hasattr(value, "go_backwards")
            ):
                raise ValueError(
                    f"Bidirectional needs an RNN layer (LSTM, GRU, RNN(cell), ...) as `{what}`; "
                    f"received {what}={value!r}."
                )
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Invalid merge mode {merge_mode!r}; expected one of {_MERGE_MODES}.")
        if weights is not None:
            raise NotImplementedError(
                "Bidirectional(weights=...) is not supported; use set_weights."
            )
        super().__init__(**kwargs)
        self.layer = layer
        self.merge_mode = merge_mode
        common = {}
        if kwargs.get("dtype") is not None:  # an explicit dtype applies to both copies
            common["dtype"] = self.dtype
        self.forward_layer = _copy(
            layer, name="forward_" + _without_prefix(layer.name, "forward_"), **common
        )
        if backward_layer is None:
            backward_layer = _copy(
                layer, name="backward_" + _without_prefix(layer.name, "backward_"),
                go_backwards=not layer.go_backwards, **common,
            )  # fmt: skip
        elif "dtype" in common and backward_layer.dtype != self.dtype:
            backward_layer = _copy(backward_layer, **common)  # the explicit dtype wins
        self.backward_layer = backward_layer
        self._check_directions()
        for direction in (self.forward_layer, self.backward_layer):
            if hasattr(direction, "zero_output_for_mask"):
                direction.zero_output_for_mask = direction.return_sequences
        self.stateful = getattr(layer, "stateful", False)
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.supports_masking = True

    def _check_directions(self) -> None:
        fw, bw = self.forward_layer, self.backward_layer
        if fw.go_backwards == bw.go_backwards:
            raise ValueError(
                "Forward layer and backward layer should have different `go_backwards` value. "
                f"Received: forward_layer.go_backwards={fw.go_backwards}, "
                f"backward_layer.go_backwards={bw.go_backwards}"
            )
        for attribute in ("stateful", "return_sequences", "return_state"):
            forward, backward = getattr(fw, attribute, False), getattr(bw, attribute, False)
            if forward != backward:
                raise ValueError(
                    "Forward layer and backward layer are expected to have the same value for "
                    f'attribute "{attribute}", got "{forward}" for forward layer and '
                    f'"{backward}" for backward layer'
                )

    def _sublayers(self) -> list[Layer]:
        return [self.forward_layer, self.backward_layer]

    def call(
        self, inputs: Any, initial_state: Any = None, mask: Any = None, training: bool = False
    ) -> Any:
        fw_state = bw_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fw_state, bw_state = list(initial_state[:half]), list(initial_state[half:])
        y = self.forward_layer(inputs, initial_state=fw_state, mask=mask, training=training)
        y_rev = self.backward_layer(inputs, initial_state=bw_state, mask=mask, training=training)
        states: list = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = array_ops.reverse(y_rev, [1])
        if self.merge_mode == "concat":
            output = join_ops.concat([y, y_rev], axis=-1)
        elif self.merge_mode == "sum":
            output = y + y_rev
        elif self.merge_mode == "ave":
            output = (y + y_rev) * 0.5
        elif self.merge_mode == "mul":
            output = math_ops.multiply(y, y_rev)
        else:
            output = [y, y_rev]
        if self.return_state:
            return (output if isinstance(output, list) else [output]) + states
        return output

    @property
    def states(self) -> Any:
        """The forward then the backward layer's state Variables (stateful layers), or None."""
        fw, bw = self.forward_layer.states, self.backward_layer.states
        if fw and bw:
            return tuple(nest.flatten(fw) + nest.flatten(bw))
        return None

    def reset_states(self, states: Any = None) -> None:
        """Zeroes both directions' states (or sets them: the first half of `states` forward)."""
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        half = None if states is None else len(states) // 2
        self.forward_layer.reset_states(None if states is None else list(states[:half]))
        self.backward_layer.reset_states(None if states is None else list(states[half:]))

    def reset_state(self, states: Any = None) -> None:
        self.reset_states(states)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        outputs = 2 if self.merge_mode is None else 1
        if self.return_state:
            states = len(self.forward_layer.compute_mask(inputs, mask)) - 1
            return [output_mask] * outputs + [None] * (2 * states)
        return output_mask if outputs == 1 else [output_mask, output_mask]

    def compute_output_shape(self, input_shape: tuple) -> Any:
        single = self.forward_layer.compute_output_shape(input_shape)
        states = []
        if self.return_state:
            states = single[1:] * 2
            single = single[0]
        if self.merge_mode == "concat":
            merged = tuple(single[:-1]) + (2 * single[-1],)
            output = [merged]
        elif self.merge_mode is None:
            output = [tuple(single), tuple(single)]
        else:
            output = [tuple(single)]
        if self.return_state:
            return output + list(states)
        return output[0] if len(output) == 1 else output

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "merge_mode": self.merge_mode,
            "layer": serialization.serialize(self.forward_layer),
            "backward_layer": serialization.serialize(self.backward_layer),
        }

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Bidirectional:
        config = dict(config)
        for key in ("layer", "backward_layer"):
            if isinstance(config.get(key), dict):
                config[key] = serialization.deserialize(config[key], custom_objects)
        return cls(**config)
