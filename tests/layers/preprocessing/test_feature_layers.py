"""Keras 3's feature preprocessing layers: Normalization, Discretization, CategoryEncoding,
IntegerLookup, Resizing, CenterCrop; values against NumPy and Keras's documented examples."""

import numpy as np
import pytest

import sluice as sl
from sluice._keras.layers.preprocessing import discretization

L = sl.layers


def value(x):
    return np.asarray(x)


# -- Normalization ------------------------------------------------------------------------------
@pytest.mark.parametrize("axis, keep", [(-1, (2,)), (None, ()), ((1, 2), (1, 2)), (1, (1,))])
def test_normalization_adapt_equals_numpy_statistics(axis, keep):
    data = np.random.default_rng(0).normal(3.0, 2.0, size=(6, 3, 4)).astype(np.float32)
    layer = L.Normalization(axis=axis)
    layer.adapt(data)
    reduce = tuple(d for d in range(3) if d not in keep)
    mean = data.mean(axis=reduce, keepdims=True)
    std = data.std(axis=reduce, keepdims=True)
    np.testing.assert_allclose(value(layer(data)), (data - mean) / std, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer.adapt_mean.numpy(), np.squeeze(mean), rtol=1e-5)


def test_normalization_adapt_over_batches_combines_them_exactly():
    data = np.random.default_rng(1).normal(size=(40, 3)).astype(np.float32)
    whole, batched, dataset = L.Normalization(), L.Normalization(), L.Normalization()
    whole.adapt(data)
    batched.adapt([data[:7], data[7:25], data[25:]])
    dataset.adapt(sl.data.Dataset.from_tensor_slices((data, data)).batch(16))  # (x, y): x
    for layer in (batched, dataset):
        np.testing.assert_allclose(layer.adapt_mean.numpy(), data.mean(0), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(layer.adapt_variance.numpy(), data.var(0), rtol=1e-4)


def test_normalization_given_statistics_invert_and_keras_examples():
    x = np.array([[1.0], [2.0], [3.0]], np.float32)
    np.testing.assert_allclose(
        value(L.Normalization(mean=3.0, variance=2.0)(x)).ravel(), [-1.4142135, -0.7071068, 0]
    )
    data = np.array([[0, 7, 4], [2, 9, 6], [0, 7, 4], [2, 9, 6]], np.float32)
    layer = L.Normalization(invert=True)
    layer.adapt(data)
    np.testing.assert_allclose(value(layer(np.array([[1.0, 2.0, 3.0]], np.float32))), [[2, 10, 8]])
    per_feature = L.Normalization(mean=[1.0, 2.0], variance=[4.0, 9.0])
    np.testing.assert_allclose(value(per_feature(np.array([[3.0, 5.0]], np.float32))), [[1, 1]])
    with pytest.raises(ValueError, match="both `mean` and `variance` must be set"):
        L.Normalization(mean=1.0)


@pytest.mark.slow
def test_an_adapted_normalization_trains_saves_and_loads(tmp_path):
    data = np.random.default_rng(2).normal(5.0, 3.0, size=(16, 2)).astype(np.float32)
    norm = L.Normalization()
    norm.adapt(data)
    model = sl.Sequential([sl.Input((2,)), norm, L.Dense(1)])
    model.compile(sl.optimizers.SGD(0.05), "mse")
    model.fit(data, data[:, :1], epochs=2, verbose=0)
    np.testing.assert_allclose(norm.adapt_mean.numpy(), data.mean(0), rtol=1e-5)  # not trained
    model.save(tmp_path / "m.keras")
    loaded = sl.models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(loaded.predict(data, verbose=0), model.predict(data, verbose=0))


# -- Discretization -----------------------------------------------------------------------------
def test_discretization_bins_equal_np_digitize_and_encodings():
    x = np.array([[-1.5, 1.0, 3.4, 0.5], [0.0, 3.0, 1.3, 0.0]])
    bins = [0.0, 1.0, 2.0]
    got = value(L.Discretization(bin_boundaries=bins)(x))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.digitize(x, bins))
    hot = value(L.Discretization(bin_boundaries=bins, output_mode="one_hot")(x))
    np.testing.assert_array_equal(hot, np.eye(4)[np.digitize(x, bins)])
    counts = value(L.Discretization(bin_boundaries=bins, output_mode="count")(x))
    np.testing.assert_array_equal(counts, [[1, 1, 1, 1], [0, 2, 1, 1]])


def test_discretization_adapt_learns_quantiles():
    data = np.random.default_rng(3).uniform(0, 100, size=(1000, 1)).astype(np.float32)
    layer = L.Discretization(num_bins=4, epsilon=0.001)
    layer.adapt(data)
    np.testing.assert_allclose(layer.bin_boundaries, np.quantile(data, [0.25, 0.5, 0.75]), atol=1)
    # the summary maths on a tiny case by hand: 4 values at epsilon 0.5 keep every second one
    summary = discretization.summarize(np.array([4.0, 1.0, 3.0, 2.0]), 0.5)
    np.testing.assert_array_equal(summary, [[2.0, 4.0], [2.0, 2.0]])
    with pytest.raises(ValueError, match="use `num_bins` instead"):
        L.Discretization(bin_boundaries=[1.0]).adapt(data)


def test_discretization_config_keeps_adapted_boundaries():
    layer = L.Discretization(num_bins=3)
    layer.adapt(np.arange(30, dtype=np.float32))
    clone = L.Discretization.from_config(layer.get_config())
    assert clone.bin_boundaries == layer.bin_boundaries and clone.num_bins == 3


# -- CategoryEncoding ---------------------------------------------------------------------------
def test_category_encoding_modes_as_keras_documents():
    one_hot = L.CategoryEncoding(num_tokens=4, output_mode="one_hot")
    np.testing.assert_array_equal(value(one_hot(np.array([3, 2, 0, 1]))), np.eye(4)[[3, 2, 0, 1]])
    multi = L.CategoryEncoding(num_tokens=4, output_mode="multi_hot")
    np.testing.assert_array_equal(
        value(multi(np.array([[0, 1], [0, 0], [1, 2], [3, 1]]))),
        [[1, 1, 0, 0], [1, 0, 0, 0], [0, 1, 1, 0], [0, 1, 0, 1]],
    )
    count = L.CategoryEncoding(num_tokens=4, output_mode="count")
    weights = np.array([[0.1, 0.2], [0.1, 0.1], [0.2, 0.3], [0.4, 0.2]], np.float32)
    np.testing.assert_allclose(
        value(count(np.array([[0, 1], [0, 0], [1, 2], [3, 1]]), count_weights=weights)),
        [[0.1, 0.2, 0, 0], [0.2, 0, 0, 0], [0, 0.2, 0.3, 0], [0, 0.2, 0, 0.4]],
        rtol=1e-6,
    )
    assert count.compute_output_shape((None, 2)) == (None, 4)
    with pytest.raises(ValueError, match="num_tokens must be set"):
        L.CategoryEncoding()


# -- IntegerLookup ------------------------------------------------------------------------------
VOCAB = [12, 36, 1138, 42]


def test_integer_lookup_keras_examples():
    data = np.array([[12, 1138, 42], [42, 1000, 36]])
    layer = L.IntegerLookup(vocabulary=VOCAB)
    assert value(layer(data)).tolist() == [[1, 3, 4], [4, 0, 2]]
    adapted = L.IntegerLookup()
    adapted.adapt(data)
    assert adapted.get_vocabulary() == [-1, 42, 1138, 1000, 36, 12]
    assert value(adapted(data)).tolist() == [[5, 2, 1], [1, 3, 4]]
    two_oov = L.IntegerLookup(vocabulary=VOCAB, num_oov_indices=2)
    assert value(two_oov(np.array([[12, 1138, 42], [37, 1000, 36]]))).tolist() == [
        [2, 4, 5],
        [1, 0, 3],
    ]
    inverse = L.IntegerLookup(vocabulary=layer.get_vocabulary(), invert=True)
    assert value(inverse(layer(data))).tolist() == [[12, 1138, 42], [42, -1, 36]]


def test_integer_lookup_encodings_mask_and_tf_idf():
    data = np.array([[12, 1138, 42, 42], [42, 7, 36, 7]])
    multi = L.IntegerLookup(vocabulary=VOCAB, output_mode="multi_hot")
    np.testing.assert_array_equal(value(multi(data)), [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]])
    count = L.IntegerLookup(vocabulary=VOCAB, output_mode="count")
    np.testing.assert_array_equal(value(count(data)), [[0, 1, 0, 1, 2], [2, 0, 1, 0, 1]])
    tf_idf = L.IntegerLookup(
        vocabulary=VOCAB, output_mode="tf_idf", idf_weights=[0.25, 0.75, 0.6, 0.4]
    )  # the OOV weight is their mean, 0.5
    np.testing.assert_allclose(
        value(tf_idf(data)), [[0, 0.25, 0, 0.6, 0.8], [1.0, 0, 0.75, 0, 0.4]], rtol=1e-6
    )
    masked = L.IntegerLookup(vocabulary=VOCAB, mask_token=0)
    assert masked.get_vocabulary()[:3] == [0, -1, 12]
    assert value(masked(np.array([0, 12, 5]))).tolist() == [0, 2, 1]
    strict = L.IntegerLookup(vocabulary=VOCAB, num_oov_indices=0)
    with pytest.raises(sl.errors.InvalidArgumentError, match="should be in vocabulary"):
        strict(np.array([12, 5]))


def test_integer_lookup_config_keeps_an_adapted_vocabulary():
    lookup = L.IntegerLookup(output_mode="count")
    lookup.adapt(np.array([3, 3, 9, 7, 7, 7]))
    clone = L.IntegerLookup.from_config(lookup.get_config())
    assert clone.get_vocabulary() == lookup.get_vocabulary() == [-1, 7, 3, 9]
    x = np.array([[3, 9, 9, 100]])
    np.testing.assert_array_equal(value(clone(x)), value(lookup(x)))
    np.testing.assert_array_equal(value(lookup(x)), [[1, 0, 1, 2]])


@pytest.mark.slow
def test_integer_lookup_in_a_model_saves_its_adapted_vocabulary(tmp_path):
    lookup = L.IntegerLookup(output_mode="one_hot")
    lookup.adapt(np.array([3, 3, 9, 7, 7, 7]))
    assert lookup.get_vocabulary() == [-1, 7, 3, 9]
    model = sl.Sequential([sl.Input((), dtype="int64"), lookup, L.Dense(1)])
    model.compile("sgd", "mse")
    x = np.array([3, 9, 7, 100])
    model.fit(x, np.ones((4, 1)), verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = sl.models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


# -- Resizing and CenterCrop --------------------------------------------------------------------
def test_resizing_bilinear_half_pixel_and_integer_images():
    images = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6, 1)
    got = value(L.Resizing(2, 3)(images))
    # halving each axis with half-pixel centres averages each 2x2 block
    want = images.reshape(2, 2, 2, 3, 2, 1).mean(axis=(2, 4))
    np.testing.assert_allclose(got, want)
    as_uint8 = value(L.Resizing(2, 3)(images.astype(np.uint8)))
    assert as_uint8.dtype == np.uint8
    np.testing.assert_array_equal(as_uint8, np.round(want))
    nearest = value(L.Resizing(2, 3, interpolation="nearest")(images))
    np.testing.assert_array_equal(nearest, images[:, 1::2, 1::2])  # floor((i + 0.5) * 2)
    one = value(L.Resizing(2, 3, data_format="channels_first")(images[0].transpose(2, 0, 1)))
    np.testing.assert_allclose(one, want[0].transpose(2, 0, 1))


def test_resizing_crop_to_aspect_ratio_and_center_crop():
    images = np.arange(5 * 8, dtype=np.float32).reshape(1, 5, 8, 1)
    cropped = value(L.Resizing(4, 4, crop_to_aspect_ratio=True)(images))
    # the centred 5x5 window (columns 1..5) resized to 4x4
    window = value(L.Resizing(4, 4)(images[:, :, 1:6]))
    np.testing.assert_allclose(cropped, window)
    np.testing.assert_array_equal(value(L.CenterCrop(3, 4)(images)), images[:, 1:4, 2:6])
    # larger than the image: Keras's smart_resize (crop to the aspect ratio, then resize)
    np.testing.assert_allclose(
        value(L.CenterCrop(6, 6)(images)), value(L.Resizing(6, 6)(images[:, :, 1:6]))
    )
    layer = L.CenterCrop(3, 4)
    assert layer.compute_output_shape((None, 5, 8, 3)) == (None, 3, 4, 3)
