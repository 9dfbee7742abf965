"""ConvLSTM1D/2D/3D: the layer contract, the forward values against a NumPy loop over `lax`
convolutions of Keras's cell (gates i, f, c, o), channels_first equal to channels_last
transposed, masks and go_backwards through the shared RNN loop, and a model that trains, saves
and loads."""

import numpy as np
import pytest
from jax import lax

import sluice as sl
from sluice import layers as L
from sluice.testing import run_layer_test

RNG = np.random.default_rng(23)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_conv_lstm(x, kernel, recurrent_kernel, bias, strides, padding, dilation):
    """Keras's ConvLSTMCell (channels last, rank len(strides)) run over the time axis of x."""
    rank = len(strides)
    numbers = {1: ("NWC", "WIO", "NWC"), 2: ("NHWC", "HWIO", "NHWC"),
               3: ("NDHWC", "DHWIO", "NDHWC")}[rank]  # fmt: skip
    h = c = None
    outputs = []
    for t in range(x.shape[1]):
        xa = np.asarray(lax.conv_general_dilated(x[:, t], kernel, strides, padding.upper(),
                                                 rhs_dilation=dilation,
                                                 dimension_numbers=numbers))  # fmt: skip
        if h is None:
            h = np.zeros(xa.shape[:-1] + (recurrent_kernel.shape[-2],))
            c = np.zeros_like(h)
        ha = np.asarray(lax.conv_general_dilated(h, recurrent_kernel, (1,) * rank, "SAME",
                                                 dimension_numbers=numbers))  # fmt: skip
        z_i, z_f, z_c, z_o = np.split(xa + ha + bias, 4, axis=-1)
        c = sigmoid(z_f) * c + sigmoid(z_i) * np.tanh(z_c)
        h = sigmoid(z_o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, 1), h, c


# the classes test_layer_contract runs through the layer contract
CONTRACT_CLASSES = [L.ConvLSTM1D, L.ConvLSTM2D, L.ConvLSTM3D]


@pytest.mark.parametrize(
    "kwargs, input_shape, output_shape",
    [
        (dict(filters=2, kernel_size=2), (2, 2, 3, 3, 1), (None, 2, 2, 2)),
        pytest.param(dict(filters=1, kernel_size=(1, 2), strides=(1, 2), padding="same",
                          return_sequences=True, use_bias=False), (2, 2, 2, 3, 2),
                     (None, 2, 2, 2, 1), marks=pytest.mark.slow),
        (dict(filters=2, kernel_size=2, return_sequences=True), (2, 2, 3, 1), (None, 2, 2, 2)),
        pytest.param(dict(filters=1, kernel_size=(2, 1, 2)), (1, 2, 2, 2, 2, 1),
                     (None, 1, 2, 1, 1), marks=pytest.mark.slow),
    ],
)  # fmt: skip
def test_layer_contract(kwargs, input_shape, output_shape):
    cls = {4: L.ConvLSTM1D, 5: L.ConvLSTM2D, 6: L.ConvLSTM3D}[len(input_shape)]
    channels, filters = input_shape[-1], kwargs["filters"]
    k = tuple(int(n) for n in np.broadcast_to(kwargs["kernel_size"], len(input_shape) - 3))
    weights = {"conv_lstm_cell/kernel": k + (channels, 4 * filters),
               "conv_lstm_cell/recurrent_kernel": k + (filters, 4 * filters)}  # fmt: skip
    if kwargs.get("use_bias", True):
        weights["conv_lstm_cell/bias"] = (4 * filters,)
    run_layer_test(cls, kwargs, input_shape, output_shape, weights)


@pytest.mark.parametrize("cls, spatial, kernel_size, strides, padding, dilation", [
    (L.ConvLSTM2D, (5, 4), (2, 3), (1, 2), "same", (1, 1)),
    pytest.param(L.ConvLSTM2D, (5, 4), (2, 3), (1, 1), "valid", (2, 1), marks=pytest.mark.slow),
    pytest.param(L.ConvLSTM1D, (5,), (2,), (2,), "same", (1,), marks=pytest.mark.slow),
    pytest.param(L.ConvLSTM3D, (3, 4, 3), (2, 2, 1), (1, 2, 1), "valid", (1, 1, 1),
                 marks=pytest.mark.slow),
])  # fmt: skip
def test_matches_numpy(cls, spatial, kernel_size, strides, padding, dilation):
    x = RNG.normal(size=(2, 3, *spatial, 2))
    kwargs = dict(filters=3, kernel_size=kernel_size, strides=strides, padding=padding,
                  dilation_rate=dilation, return_sequences=True, return_state=True)  # fmt: skip
    layer = cls(**kwargs, bias_initializer="random_normal")
    outputs = [np.asarray(t) for t in layer(x.astype("float32"))]
    kernel, recurrent_kernel, bias = (w.astype(np.float64) for w in layer.get_weights())
    expected = np_conv_lstm(x, kernel, recurrent_kernel, bias, strides, padding, dilation)
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert layer.compute_output_shape((None,) + x.shape[1:]) == [
        (None,) + expected[0].shape[1:], (None,) + expected[1].shape[1:],
        (None,) + expected[2].shape[1:],
    ]  # fmt: skip


@pytest.mark.slow
def test_channels_first_is_channels_last_transposed():
    x = RNG.normal(size=(2, 3, 4, 3, 2)).astype("float32")
    kwargs = dict(filters=2, kernel_size=(2, 3), padding="same", return_sequences=True)
    last = L.ConvLSTM2D(**kwargs, bias_initializer="random_normal")
    expected = np.asarray(last(x))
    first = L.ConvLSTM2D(**kwargs, data_format="channels_first")
    first.build((None, 3, 2, 4, 3))
    first.set_weights(last.get_weights())
    got = np.asarray(first(np.moveaxis(x, -1, 2)))
    np.testing.assert_allclose(np.moveaxis(got, 2, -1), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_forget_bias_starts_at_one_and_masks_and_backwards():
    layer = L.ConvLSTM2D(2, 1, return_sequences=True)
    x = RNG.normal(size=(2, 3, 2, 2, 1)).astype("float32")
    mask = np.array([[1, 1, 0], [1, 0, 0]], bool)
    out = np.asarray(layer(x, mask=mask))
    np.testing.assert_array_equal(layer.get_weights()[2], [0, 0, 1, 1, 0, 0, 0, 0])
    # a masked step repeats the previous output
    np.testing.assert_array_equal(out[0, 2], out[0, 1])
    np.testing.assert_array_equal(out[1, 2], out[1, 0])
    back = L.ConvLSTM2D(2, 1, go_backwards=True)
    back.build((None, 3, 2, 2, 1))
    back.set_weights(layer.get_weights())
    forward_on_reversed = np.asarray(layer(x[:, ::-1]))[:, -1]
    np.testing.assert_allclose(np.asarray(back(x)), forward_on_reversed, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: L.ConvLSTM2D(2, 3, dropout=0.1), NotImplementedError, "dropout"),
        (lambda: L.ConvLSTM2D(2, 3, stateful=True), NotImplementedError, "stateful"),
        (lambda: L.ConvLSTM2D(2, 3)(L.Input((4, None, 6, 1))), ValueError, "static input"),
        (lambda: L.ConvLSTM2D(2, 3)(L.Input((4, 6, 1))), ValueError, "expected ndim=5"),
        (lambda: L.ConvLSTM2D(2, 3, strides=2, dilation_rate=2), ValueError, "dilation_rate"),
        (lambda: L.ConvLSTM3D(2, 3)(L.Input((4, 6, 6, 1))), ValueError, "expected ndim=6"),
    ],
)
def test_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


@pytest.mark.slow
def test_model_trains_saves_and_loads(tmp_path):
    x = RNG.normal(size=(8, 3, 4, 4, 1)).astype("float32")
    y = RNG.integers(0, 2, size=(8,))
    model = sl.Sequential([
        L.Input((3, 4, 4, 1)),
        L.ConvLSTM2D(2, 3, padding="same"),
        L.GlobalAveragePooling2D(),
        L.Dense(2, activation="softmax"),
    ])  # fmt: skip
    model.compile(optimizer=sl.optimizers.Adam(0.05), loss="sparse_categorical_crossentropy")
    losses = model.fit(x, y, batch_size=8, epochs=4, verbose=0).history["loss"]
    assert losses[-1] < losses[0]
    path = str(tmp_path / "conv_lstm.keras")
    model.save(path)
    loaded = sl.models.load_model(path)
    assert loaded.layers[0].name == "conv_lstm2d"  # Keras's name
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)  # fmt: skip
