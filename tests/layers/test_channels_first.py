"""`data_format="channels_first"` in every layer that takes it (Keras 3): each layer's
channels-first output, with the same weights, is its channels-last output with the channels
moved to axis 1, and so are the gradients; the contract (`run_layer_test`: shapes by
`compute_output_shape`, config round trip, gradients against central differences) holds
channels first; `data_format=None` follows `sl.config.image_data_format()`; a channels-first
model saves and loads as a `.keras` file, and its weights fit the channels-last model."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice.testing import run_layer_test

RNG = np.random.default_rng(11)


def to_first(a):
    """A channels-last array (or shape tuple) with its channels moved to axis 1."""
    if isinstance(a, tuple):
        return (a[0], a[-1], *a[1:-1])
    return np.moveaxis(a, -1, 1)


ROWS = [
    # id, class, kwargs, channels-last input shape, channels-last output shape, weights
    ("conv1d", L.Conv1D, dict(filters=3, kernel_size=3, strides=2, padding="same"),
     (2, 7, 2), (None, 4, 3), {"kernel": (3, 2, 3), "bias": (3,)}),
    ("conv1d_causal", L.Conv1D, dict(filters=2, kernel_size=2, padding="causal",
     dilation_rate=2), (2, 5, 3), (None, 5, 2), {"kernel": (2, 3, 2), "bias": (2,)}),
    ("conv2d", L.Conv2D, dict(filters=3, kernel_size=(2, 3), strides=(1, 2), activation="tanh"),
     (2, 4, 5, 2), (None, 3, 2, 3), {"kernel": (2, 3, 2, 3), "bias": (3,)}),
    ("conv2d_dilated_same", L.Conv2D, dict(filters=2, kernel_size=2, dilation_rate=2,
     padding="same", use_bias=False), (2, 4, 4, 3), (None, 4, 4, 2), {"kernel": (2, 2, 3, 2)}),
    ("conv1d_transpose", L.Conv1DTranspose, dict(filters=2, kernel_size=3, strides=2,
     padding="same"), (2, 3, 3), (None, 6, 2), {"kernel": (3, 2, 3), "bias": (2,)}),
    ("conv1d_transpose_output_padding", L.Conv1DTranspose, dict(filters=2, kernel_size=2,
     strides=3, output_padding=1), (2, 3, 2), (None, 9, 2), {"kernel": (2, 2, 2), "bias": (2,)}),
    ("conv2d_transpose", L.Conv2DTranspose, dict(filters=2, kernel_size=(2, 3), strides=(2, 3),
     output_padding=(1, 2)), (2, 2, 2, 3), (None, 5, 8, 2), {"kernel": (2, 3, 2, 3),
     "bias": (2,)}),
    ("conv2d_transpose_dilated", L.Conv2DTranspose, dict(filters=2, kernel_size=2,
     dilation_rate=2, padding="same"), (2, 3, 3, 2), (None, 3, 3, 2), {"kernel": (2, 2, 2, 2),
     "bias": (2,)}),
    ("depthwise_conv2d", L.DepthwiseConv2D, dict(kernel_size=(3, 2), strides=2, padding="same",
     depth_multiplier=2), (2, 4, 3, 3), (None, 2, 2, 6), {"kernel": (3, 2, 3, 2),
     "bias": (6,)}),
    ("separable_conv2d", L.SeparableConv2D, dict(filters=3, kernel_size=2, depth_multiplier=2,
     dilation_rate=(1, 2)), (2, 3, 4, 2), (None, 2, 2, 3), {"depthwise_kernel": (2, 2, 2, 2),
     "pointwise_kernel": (1, 1, 4, 3), "bias": (3,)}),
    ("max_pooling1d", L.MaxPooling1D, dict(pool_size=3, strides=2, padding="same"),
     (2, 5, 2), (None, 3, 2), {}),
    ("average_pooling1d", L.AveragePooling1D, dict(pool_size=2), (2, 5, 3), (None, 2, 3), {}),
    ("max_pooling2d", L.MaxPooling2D, dict(pool_size=(2, 3), padding="same"), (2, 5, 4, 2),
     (None, 3, 2, 2), {}),
    ("average_pooling2d", L.AveragePooling2D, dict(pool_size=2, strides=1), (2, 3, 4, 2),
     (None, 2, 3, 2), {}),
    ("global_average_pooling1d", L.GlobalAveragePooling1D, {}, (2, 4, 3), (None, 3), {}),
    ("global_max_pooling1d", L.GlobalMaxPooling1D, dict(keepdims=True), (2, 4, 3),
     (None, 1, 3), {}),
    ("global_average_pooling2d", L.GlobalAveragePooling2D, dict(keepdims=True), (2, 3, 2, 3),
     (None, 1, 1, 3), {}),
    ("global_max_pooling2d", L.GlobalMaxPooling2D, {}, (2, 3, 2, 3), (None, 3), {}),
    ("up_sampling2d", L.UpSampling2D, dict(size=(2, 3)), (2, 2, 3, 2), (None, 4, 9, 2), {}),
    ("up_sampling2d_bilinear", L.UpSampling2D, dict(size=(3, 2), interpolation="bilinear"),
     (2, 2, 3, 2), (None, 6, 6, 2), {}),
    ("zero_padding1d", L.ZeroPadding1D, dict(padding=(1, 2)), (2, 3, 2), (None, 6, 2), {}),
    ("zero_padding2d", L.ZeroPadding2D, dict(padding=((1, 0), (2, 1))), (2, 2, 3, 2),
     (None, 3, 6, 2), {}),
    ("cropping2d", L.Cropping2D, dict(cropping=((1, 0), (1, 2))), (2, 3, 5, 2),
     (None, 2, 2, 2), {}),
    ("flatten", L.Flatten, {}, (2, 3, 2, 4), (None, 24), {}),
]  # fmt: skip
IDS = [row[0] for row in ROWS]


def cf_output(shape: tuple, cl_input_rank: int) -> tuple:
    """The channels-first form of a channels-last output shape: outputs of the input's rank
    keep their channels on axis 1; the others (pooled or flattened) are the same."""
    return to_first(shape) if len(shape) == cl_input_rank else shape


# The channels-first rows in the format of the other LAYERS tables of tests/layers (id, class,
# kwargs, input shape, output shape, weights, non-trainable, extra), which the saving tests
# gather too: every layer channels first goes through a .keras file.
LAYERS = [
    (f"{row_id}_channels_first", cls, {**kwargs, "data_format": "channels_first"},
     to_first(shape), cf_output(out_shape, len(shape)), weights, 0, {})
    for row_id, cls, kwargs, shape, out_shape, weights in ROWS
]  # fmt: skip


@pytest.mark.parametrize(
    "cls, kwargs, shape, out_shape, weights", [r[1:6] for r in LAYERS], ids=IDS
)
def test_contract_channels_first(cls, kwargs, shape, out_shape, weights):
    run_layer_test(cls, kwargs, shape, out_shape, weights)


def check_same_maths(last, first, shape, call_kwargs=None):
    """In float64, in one graph: `first` (channels first) on the transposed inputs, with
    `last`'s weights, gives `last`'s outputs and the gradients of a random projection of them
    w.r.t. the inputs (transposed) and the weights (the same: the kernels' layout does not
    depend on the data format)."""
    call_kwargs = call_kwargs or {}
    x = RNG.normal(size=shape)
    y_shape = last.compute_output_shape(shape)
    move = len(y_shape) == len(shape)  # the output has a channel axis
    projection = RNG.normal(size=y_shape)
    with sl.Graph().as_default():
        results = []
        for layer, x_in, p in [
            (last, x, projection),
            (first, to_first(x), to_first(projection) if move else projection),
        ]:
            t = sl.placeholder(sl.float64, list(x_in.shape))
            y = layer(t, **call_kwargs)
            assert tuple(y.shape.as_list()) == tuple(layer.compute_output_shape(x_in.shape))
            grads = sl.gradients(sl.reduce_sum(y * p), [t] + layer.trainable_weights)
            results.append(({t: x_in}, [y, grads]))
        weight_shapes = [v.shape.as_list() for v in last.weights]
        assert [v.shape.as_list() for v in first.weights] == weight_shapes
        values = [RNG.normal(size=s) for s in weight_shapes]
        values = [
            np.abs(v) + 0.5 if "variance" in w.name else v for v, w in zip(values, last.weights)
        ]
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            for layer in (last, first):
                for v, value in zip(layer.weights, values):
                    v.load(value, sess)
            feeds = {**results[0][0], **results[1][0]}
            (y, grads), (y_first, grads_first) = sess.run([r[1] for r in results], feeds)
    np.testing.assert_allclose(y_first, to_first(y) if move else y, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads_first[0], to_first(grads[0]), rtol=1e-10, atol=1e-12)
    for g_first, g in zip(grads_first[1:], grads[1:]):
        np.testing.assert_allclose(g_first, g, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls, kwargs, shape", [r[1:4] for r in ROWS], ids=IDS)
def test_channels_first_is_channels_last_transposed(cls, kwargs, shape):
    last = cls(**kwargs, data_format="channels_last", dtype="float64")
    first = cls(**kwargs, data_format="channels_first", dtype="float64")
    check_same_maths(last, first, shape)


@pytest.mark.parametrize("training", [True, False])
def test_batch_normalization_axis_1_is_axis_minus_1_transposed(training):
    kwargs = dict(momentum=0.5, epsilon=1e-3, dtype="float64")
    last, first = L.BatchNormalization(axis=-1, **kwargs), L.BatchNormalization(axis=1, **kwargs)
    check_same_maths(last, first, (3, 2, 4, 2), {"training": training})
    check_same_maths(
        L.BatchNormalization(**kwargs), L.BatchNormalization(axis=1, **kwargs), (4, 5, 3)
    )


def test_global_average_pooling1d_channels_first_honours_the_mask():
    x = RNG.normal(size=(2, 3, 5))  # [batch, channels, steps]
    mask = np.array([[1, 1, 0, 0, 0], [1, 0, 1, 1, 1]], bool)
    with sl.Graph().as_default():
        t = sl.placeholder(sl.float64, [None, 3, 5])
        m = sl.placeholder(sl.bool, [None, 5])
        layer = L.GlobalAveragePooling1D("channels_first", keepdims=True, dtype="float64")
        y = layer(t, mask=m)
        with sl.Session() as sess:
            value = sess.run(y, {t: x, m: mask})
    expected = [x[i][:, mask[i]].mean(axis=1, keepdims=True) for i in range(2)]
    np.testing.assert_allclose(value, expected, rtol=1e-12)


def test_spatial_dropout2d_channels_first_drops_whole_channels():
    x = np.ones((4, 6, 3, 3))  # [batch, channels, rows, cols]
    with sl.Graph().as_default():
        t = sl.placeholder(sl.float64, list(x.shape))
        layer = L.SpatialDropout2D(0.5, data_format="channels_first", seed=3)
        y = layer(t, training=True)
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())  # its seed generator's state
            value = sess.run(y, {t: x})
    per_channel = value.reshape(4, 6, 9)
    assert np.all(per_channel == per_channel[:, :, :1])  # one choice per (example, channel)
    assert set(np.unique(per_channel)) == {0.0, 2.0}
    assert L.SpatialDropout2D(0.5, data_format="channels_first").get_config()["data_format"] == (
        "channels_first"
    )


@pytest.mark.parametrize("cls, kwargs", [r[1:3] for r in ROWS] + [(L.SpatialDropout2D,
                         dict(rate=0.5))], ids=IDS + ["spatial_dropout2d"])  # fmt: skip
def test_none_is_the_image_data_format_when_the_layer_is_made(cls, kwargs):
    assert cls(**kwargs).data_format == "channels_last"
    try:
        sl.config.set_image_data_format("channels_first")
        layer = cls(**kwargs)
    finally:
        sl.config.set_image_data_format("channels_last")
    assert layer.data_format == "channels_first"
    assert layer.get_config()["data_format"] == "channels_first"  # saved, so a file keeps it
    assert cls.from_config(layer.get_config()).data_format == "channels_first"


def test_layers_without_a_data_format_in_keras_take_none():
    for make in (L.UpSampling1D, L.Cropping1D, lambda **kw: L.SpatialDropout1D(0.5, **kw)):
        with pytest.raises(TypeError):
            make(data_format="channels_first")


def channels_first_model(data_format):
    """A small image classifier in `data_format`: every layout-dependent kind of layer once."""
    first = data_format == "channels_first"
    fmt = {"data_format": data_format}
    return sl.Sequential(
        [
            sl.Input((2, 6, 6) if first else (6, 6, 2)),
            L.ZeroPadding2D(1, **fmt),
            L.Conv2D(3, 3, activation="relu", **fmt),
            L.BatchNormalization(axis=1 if first else -1),
            L.MaxPooling2D(2, **fmt),
            L.SeparableConv2D(4, 2, padding="same", **fmt),
            L.Conv2DTranspose(2, 2, strides=2, **fmt),
            L.Cropping2D(1, **fmt),
            L.UpSampling2D(1, **fmt),
            L.Flatten(**fmt),
            L.Dense(3, activation="softmax"),
        ]
    )


def test_channels_first_model_saves_and_shares_weights_with_channels_last(tmp_path):
    x = RNG.normal(size=(4, 2, 6, 6)).astype("float32")  # channels first
    model = channels_first_model("channels_first")
    expected = model.predict(x, verbose=0)
    path = str(tmp_path / "first.keras")
    model.save(path)
    loaded = sl.models.load_model(path)
    assert [layer.get_config().get("data_format") for layer in loaded.layers][:2] == [
        "channels_first"
    ] * 2
    np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, rtol=1e-6)
    # the weights do not depend on the layout: the channels-last model takes them as they are
    last = channels_first_model("channels_last")
    last.set_weights(loaded.get_weights())
    np.testing.assert_allclose(
        last.predict(np.moveaxis(x, 1, -1), verbose=0), expected, rtol=1e-5, atol=1e-6
    )


@pytest.mark.slow
def test_channels_first_model_trains():
    x = RNG.normal(size=(8, 2, 6, 6)).astype("float32")
    y = RNG.integers(0, 3, size=(8,))
    model = channels_first_model("channels_first")
    model.compile(optimizer=sl.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    losses = model.fit(x, y, batch_size=8, epochs=3, verbose=0).history["loss"]
    assert losses[-1] < losses[0]
