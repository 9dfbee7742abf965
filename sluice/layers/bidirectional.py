"""`Bidirectional`: a forward and a backward copy of an RNN layer over the same inputs."""

from __future__ import annotations

from typing import Any

from sluice.framework.ir import dtypes
from sluice.framework.ops import fill_ops, join_ops, math_ops, reduction_ops
from sluice.layers import recurrent
from sluice.layers.base import Layer

_MERGE_MODES = ("sum", "mul", "concat", "ave", None)


def _layer_from_config(config: dict) -> Layer:
    classes = {
        c.__name__: c for c in (recurrent.RNN, recurrent.SimpleRNN, recurrent.LSTM, recurrent.GRU)
    }
    if config.get("class_name") not in classes:
        raise ValueError(
            f"Bidirectional cannot rebuild a layer of class {config.get('class_name')!r}."
        )
    return classes[config["class_name"]].from_config(config["config"])


class Bidirectional(Layer):
    """Runs `layer` forwards and a copy of it backwards (`go_backwards` flipped), then merges.

    The copies are `forward_<name>` and `backward_<name>` (Keras's names), so their weights are
    `bidirectional/forward_lstm/lstm_cell/kernel`, .... The backward outputs of
    `return_sequences` are reversed back (row by row, over each row's valid steps), so both
    directions are aligned with the inputs; masked steps output zeros.

    Args:
      layer: an RNN layer (SimpleRNN, LSTM, GRU or RNN); it is only copied, never called.
      merge_mode: "concat" (default), "sum", "mul", "ave", or None (a list of both outputs).
      weights: must be None.
      backward_layer: an explicit backward layer (default: a copy of `layer`).

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
            layer = _layer_from_config(layer)
        if isinstance(backward_layer, dict):
            backward_layer = _layer_from_config(backward_layer)
        if not isinstance(layer, recurrent.RNN):
            raise TypeError(f"Bidirectional needs an RNN layer (LSTM, GRU, ...), got {layer!r}.")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Invalid merge mode {merge_mode!r}; expected one of {_MERGE_MODES}.")
        if weights is not None:
            raise NotImplementedError(
                "Bidirectional(weights=...) is not supported; use set_weights."
            )
        super().__init__(**kwargs)
        self.layer = layer
        self.merge_mode = merge_mode
        self._backward_arg = backward_layer
        common = {"zero_output_for_mask": True}
        if kwargs.get("dtype") is not None:  # an explicit dtype applies to both copies
            common["dtype"] = self.dtype
        config = {**layer.get_config(), **common, "name": "forward_" + layer.name}
        self.forward_layer = type(layer).from_config(config)
        if backward_layer is None:
            config = {
                **layer.get_config(), **common, "name": "backward_" + layer.name,
                "go_backwards": not layer.go_backwards,
            }  # fmt: skip
            self.backward_layer = type(layer).from_config(config)
        else:
            if backward_layer.go_backwards == layer.go_backwards:
                raise ValueError(
                    "backward_layer.go_backwards must be the opposite of layer.go_backwards."
                )
            self.backward_layer = backward_layer
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.supports_masking = True

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
            lengths = None
            if mask is not None:
                lengths = reduction_ops.reduce_sum(fill_ops.cast(mask, dtypes.int32), axis=1)
            y_rev = recurrent.reverse_valid_steps(y_rev, lengths)
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

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        output_mask = mask if self.return_sequences else None
        outputs = 2 if self.merge_mode is None else 1
        if self.return_state:
            return [output_mask] * outputs + [None] * (2 * len(self.layer._state_sizes()))
        return output_mask if outputs == 1 else [output_mask, output_mask]

    def compute_output_shape(self, input_shape: tuple) -> Any:
        single = self.layer.compute_output_shape(input_shape)
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
        config = {
            **super().get_config(),
            "layer": {"class_name": type(self.layer).__name__, "config": self.layer.get_config()},
            "merge_mode": self.merge_mode,
        }
        if self._backward_arg is not None:
            config["backward_layer"] = {
                "class_name": type(self._backward_arg).__name__,
                "config": self._backward_arg.get_config(),
            }
        return config
