"""`ConvLSTM1D`, `ConvLSTM2D`, `ConvLSTM3D`: LSTMs whose input and recurrent transformations
are convolutions of rank 1, 2 or 3 (Keras 3's ConvLSTM layers and their `ConvLSTMCell`).

For inputs [batch, time, *spatial, channels] (channels_first: [batch, time, channels,
*spatial]) and states h, c [batch, *spatial', filters] (zeros unless given), each step is,
with the kernels split in four along their last axis (gates i, f, c, o, Keras's order):

    x_g = conv(x_t, kernel_g, strides, padding, dilation_rate) + bias_g
    h_g = conv(h, recurrent_kernel_g, strides 1, "same")
    i, f, o = recurrent_activation(x_i + h_i), ... (x_f + h_f), ... (x_o + h_o)
    c = f * c + i * activation(x_c + h_c);   h = o * activation(c)

and the time loop is the one every Keras RNN layer here runs (`rnn_loop`: masks,
`go_backwards`, `unroll`). The step's output is h.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import activations, constraints, initializers, regularizers
from sluice._keras.layers.arguments import _data_format
from sluice._keras.layers.base import Layer
from sluice._keras.layers.convolutional.base_conv import (
    add_bias,
    check_dilation,
    conv_output_length,
    convolve,
    spatial_dims,
    standardize_padding,
    standardize_tuple,
    with_spatial_dims,
)
from sluice._keras.layers.convolutional.conv3d import volume_format
from sluice._keras.layers.input_spec import InputSpec
from sluice._keras.layers.rnn import rnn_loop
from sluice._tf1.cells import nest
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.nn import conv3d_ops

CELL_KEYS = (
    "filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate",
    "activation", "recurrent_activation", "use_bias", "kernel_initializer",
    "recurrent_initializer", "bias_initializer", "unit_forget_bias", "kernel_regularizer",
    "recurrent_regularizer", "bias_regularizer", "kernel_constraint", "recurrent_constraint",
    "bias_constraint", "dropout", "recurrent_dropout", "seed",
)  # fmt: skip


def _conv(x: Any, kernel: Any, strides: tuple, padding: str, dilation: tuple, first: bool):
    """The N-D convolution of rank len(strides) (1 and 2: `base_conv.convolve`; 3: Conv3D)."""
    if len(strides) == 3:
        return conv3d_ops.conv3d(
            x, kernel, list(strides), padding.upper(), data_format=volume_format(first),
            dilations=list(dilation),
        )  # fmt: skip
    return convolve(x, kernel, strides, padding, dilation, first)


class ConvLSTMCell(Layer):
    """The weights and one step of a ConvLSTM layer (Keras's `ConvLSTMCell`): `kernel`
    [*kernel_size, in, 4 filters], `recurrent_kernel` [*kernel_size, filters, 4 filters],
    `bias` [4 filters] (the forget quarter starts at 1 with `unit_forget_bias`)."""

    def __init__(self, owner: ConvLSTM, **kwargs: Any):
        super().__init__(name="conv_lstm_cell", **kwargs)
        self._parent_layer = owner  # its configuration (not a child: "_parent" attributes)

    def build(self, step_shape: tuple) -> None:
        o = self._parent_layer
        channels = step_shape[1] if o.data_format == "channels_first" else step_shape[-1]
        self.kernel = self.add_weight(
            shape=o.kernel_size + (channels, 4 * o.filters), name="kernel",
            initializer=o.kernel_initializer, regularizer=o.kernel_regularizer,
            constraint=o.kernel_constraint,
        )  # fmt: skip
        self.recurrent_kernel = self.add_weight(
            shape=o.kernel_size + (o.filters, 4 * o.filters), name="recurrent_kernel",
            initializer=o.recurrent_initializer, regularizer=o.recurrent_regularizer,
            constraint=o.recurrent_constraint,
        )  # fmt: skip
        self.bias = None
        if o.use_bias:
            init = o.bias_initializer
            if o.unit_forget_bias:
                base = o.bias_initializer

                def init(shape: Any, dtype: Any = None) -> Any:
                    n = o.filters
                    ones = initializers.get("ones")((n,), dtype=dtype)
                    return join_ops.concat([base((n,), dtype=dtype), ones,
                                            base((2 * n,), dtype=dtype)], 0)  # fmt: skip

            self.bias = self.add_weight(
                shape=(4 * o.filters,), name="bias", initializer=init,
                regularizer=o.bias_regularizer, constraint=o.bias_constraint,
            )  # fmt: skip

    def step(self, x: Any, h: Any, c: Any) -> tuple[Any, Any]:
        o = self._parent_layer
        first, ones = o.data_format == "channels_first", (1,) * o.rank
        z = _conv(x, self.kernel, o.strides, o.padding, o.dilation_rate, first)
        z = z + _conv(h, self.recurrent_kernel, ones, "same", ones, first)
        if self.bias is not None:
            z = add_bias(z, self.bias, first)
        z_i, z_f, z_c, z_o = join_ops.split(z, 4, axis=1 if first else o.rank + 1)
        i = o.recurrent_activation(z_i)
        f = o.recurrent_activation(z_f)
        c = f * c + i * o.activation(z_c)
        h = o.recurrent_activation(z_o) * o.activation(c)
        return h, c


class ConvLSTM(Layer):
    """A convolutional LSTM of rank `rank` over sequences (see the module docstring).

    Weights: `conv_lstm_cell/kernel` [*kernel_size, in, 4 filters],
    `conv_lstm_cell/recurrent_kernel` [*kernel_size, filters, 4 filters],
    `conv_lstm_cell/bias` [4 filters].

    Args:
      filters: the number of channels of h and c.
      kernel_size, strides, dilation_rate: an int or `rank` ints (the input convolution; the
        recurrent one has stride 1 and "same" padding).
      padding: "valid" or "same", of the input convolution.
      data_format: "channels_last" ([batch, time, *spatial, channels]) or "channels_first"
        ([batch, time, channels, *spatial]); None: `sl.config.image_data_format()`.
      activation, recurrent_activation: default tanh and sigmoid.
      use_bias, unit_forget_bias: a bias, with the forget gate's quarter starting at 1.
      kernel_initializer, recurrent_initializer, bias_initializer, the regularizers and
      constraints, activity_regularizer: as in LSTM.
      dropout, recurrent_dropout: must be 0 (not supported here).
      seed: kept in the config.
      return_sequences, return_state, go_backwards, unroll: as in LSTM.
      stateful: must be False (not supported here).
    """

    rank = 2

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = 1,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        unit_forget_bias: bool = True,
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        seed: int | None = None,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        **kwargs: Any,
    ):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        cls, rank = type(self).__name__, self.rank
        if self._auto_named:  # Keras's to_snake_case ("conv_lstm2d"), which snake_case misses
            self.name = self._base_name = f"conv_lstm{rank}d"
        if dropout or recurrent_dropout:
            raise NotImplementedError(f"{cls}: dropout and recurrent_dropout are not "
                                      "supported; give 0.")  # fmt: skip
        if stateful:
            raise NotImplementedError(f"{cls}: stateful=True is not supported.")
        self.filters = int(filters)
        self.kernel_size = standardize_tuple(kernel_size, rank, f"{cls} kernel_size")
        self.strides = standardize_tuple(strides, rank, f"{cls} strides")
        self.padding = standardize_padding(padding)
        self.data_format = _data_format(data_format)
        self.dilation_rate = standardize_tuple(dilation_rate, rank, f"{cls} dilation_rate")
        check_dilation(cls, self.strides, self.dilation_rate)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.unit_forget_bias = unit_forget_bias
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.dropout, self.recurrent_dropout, self.seed = dropout, recurrent_dropout, seed
        self.return_sequences, self.return_state = return_sequences, return_state
        self.go_backwards, self.stateful, self.unroll = go_backwards, stateful, unroll
        self.supports_masking = True
        self.input_spec = InputSpec(ndim=rank + 3)
        self.cell = ConvLSTMCell(self, dtype=kwargs.get("dtype"))

    def _state_shape(self, step_shape: tuple) -> tuple:
        """[*spatial', filters] (or channels first) for one step of shape `step_shape`."""
        spatial = tuple(
            conv_output_length(n, k, s, self.padding, d)
            for n, k, s, d in zip(spatial_dims(step_shape, self.rank, self.data_format),
                                  self.kernel_size, self.strides, self.dilation_rate)
        )  # fmt: skip
        return with_spatial_dims(step_shape, spatial, self.filters, self.data_format)

    def build(self, sequences_shape: tuple) -> None:
        step = (sequences_shape[0],) + tuple(sequences_shape[2:])
        if None in spatial_dims(step, self.rank, self.data_format):
            raise ValueError(
                "ConvLSTM layers only support static input shapes for the spatial dimension. "
                f"Received invalid input shape: input_shape={tuple(sequences_shape)}"
            )
        channels = step[1] if self.data_format == "channels_first" else step[-1]
        if channels is None:
            raise ValueError(
                "The channel dimension of the inputs should be defined. Found None. Full input "
                f"shape received: input_shape={tuple(sequences_shape)}"
            )
        self.input_spec = InputSpec(ndim=self.rank + 3, shape=(None,) + tuple(sequences_shape[1:]))
        self._build_sublayer(self.cell, step)

    def call(
        self, sequences: Any, initial_state: Any = None, mask: Any = None, training: bool = False
    ) -> Any:
        step_shape = tuple(sequences.shape.as_list()[:1] + sequences.shape.as_list()[2:])
        state = TensorShape(list(self._state_shape(step_shape)[1:]))
        if initial_state is None:
            batch = fill_ops.shape(sequences)[0]
            initial = [rnn_loop.zeros(batch, state, sequences.dtype) for _ in range(2)]
        else:
            initial = nest.flatten(list(initial_state))
            if len(initial) != 2:
                raise ValueError(
                    f"{type(self).__name__} {self.name!r} has 2 states (h and c); "
                    f"initial_state has {len(initial)}."
                )

        def step(x_t: Any, states: list) -> tuple[Any, list]:
            h, c = self.cell.step(x_t, *states)
            return h, [h, c]

        last, outputs, final = rnn_loop.run(
            step, sequences, initial, state, mask=mask, go_backwards=self.go_backwards,
            unroll=self.unroll,
        )  # fmt: skip
        result = outputs if self.return_sequences else last
        if self.return_state:
            return [result, *final]
        return result

    def compute_output_shape(self, sequences_shape: tuple) -> Any:
        batch, steps = sequences_shape[0], sequences_shape[1]
        state = self._state_shape((batch,) + tuple(sequences_shape[2:]))
        out = (batch, steps) + state[1:] if self.return_sequences else state
        return [out, state, state] if self.return_state else out

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        output_mask = mask if self.return_sequences else None
        return [output_mask, None, None] if self.return_state else output_mask

    def get_config(self) -> dict:
        config = super().get_config()
        for key in CELL_KEYS:
            value = getattr(self, key)
            if key.endswith("activation"):
                value = activations.serialize(value)
            elif key.endswith("_initializer"):
                value = initializers.serialize(value)
            elif key.endswith("_regularizer"):
                value = regularizers.serialize(value)
            elif key.endswith("_constraint"):
                value = constraints.serialize(value)
            config[key] = value
        config.update(
            return_sequences=self.return_sequences, return_state=self.return_state,
            go_backwards=self.go_backwards, stateful=self.stateful, unroll=self.unroll,
        )  # fmt: skip
        return config


@export("layers.ConvLSTM1D")
class ConvLSTM1D(ConvLSTM):
    """A 1-D convolutional LSTM over sequences of [steps, channels] (see `ConvLSTM`).

    >>> ConvLSTM1D(4, 3, padding="same")(sl.Input((5, 8, 2))).shape
    TensorShape([None, 8, 4])
    """

    rank = 1


@export("layers.ConvLSTM2D")
class ConvLSTM2D(ConvLSTM):
    """A 2-D convolutional LSTM over sequences of images (see `ConvLSTM`).

    >>> ConvLSTM2D(4, 3, padding="same", return_sequences=True)(sl.Input((5, 8, 8, 2))).shape
    TensorShape([None, 5, 8, 8, 4])
    """

    rank = 2


@export("layers.ConvLSTM3D")
class ConvLSTM3D(ConvLSTM):
    """A 3-D convolutional LSTM over sequences of volumes (see `ConvLSTM`).

    >>> ConvLSTM3D(2, 2)(sl.Input((3, 4, 4, 4, 1))).shape
    TensorShape([None, 3, 3, 3, 2])
    """

    rank = 3
