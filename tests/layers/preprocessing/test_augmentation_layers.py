"""Keras 3's random image layers: identity at inference, shapes kept, reproducible with a
seed, new draws each call and step, values of fixed transforms by hand, trained in `fit`."""

import numpy as np
import pytest

import sluice as sl

L = sl.layers
RNG = np.random.default_rng(0)
IMAGES = RNG.uniform(0, 255, size=(8, 5, 6, 2)).astype(np.float32)

LAYERS = {
    "flip": lambda seed: L.RandomFlip(seed=seed),
    "rotation": lambda seed: L.RandomRotation(0.2, seed=seed),
    "zoom": lambda seed: L.RandomZoom(0.3, 0.2, seed=seed),
    "translation": lambda seed: L.RandomTranslation(0.2, 0.3, seed=seed),
    "crop": lambda seed: L.RandomCrop(3, 4, seed=seed),
    "contrast": lambda seed: L.RandomContrast(0.5, seed=seed),
    "brightness": lambda seed: L.RandomBrightness(0.3, seed=seed),
}


FAST = {"flip", "rotation"}  # each kind compiles its own steps: the rest is slow


@pytest.mark.parametrize(
    "kind", [k if k in FAST else pytest.param(k, marks=pytest.mark.slow) for k in sorted(LAYERS)]
)
def test_identity_at_inference_new_draws_in_training_and_seeded(kind):
    layer, twin = LAYERS[kind](7), LAYERS[kind](7)
    np.testing.assert_array_equal(np.asarray(layer(IMAGES, training=False)), IMAGES)
    first = np.asarray(layer(IMAGES))  # a direct call trains, as in Keras 3
    second = np.asarray(layer(IMAGES, training=True))
    want_shape = (8, 3, 4, 2) if kind == "crop" else IMAGES.shape
    assert first.shape == second.shape == want_shape and first.dtype == np.float32
    assert not np.array_equal(first, second)  # the generator advanced
    np.testing.assert_array_equal(np.asarray(twin(IMAGES)), first)  # the same seed, the same draws
    single = np.asarray(layer(IMAGES[0], training=True))
    assert single.shape == want_shape[1:]


@pytest.mark.slow
def test_flip_flips_whole_images_and_both_axes_together():
    image = np.arange(12, dtype=np.float32).reshape(1, 3, 4, 1)
    batch = np.repeat(image, 16, axis=0)
    out = np.asarray(L.RandomFlip("horizontal_and_vertical", seed=3)(batch))
    both = image[0, ::-1, ::-1]
    for o in out:
        assert np.array_equal(o, image[0]) or np.array_equal(o, both)
    assert 0 < sum(np.array_equal(o, both) for o in out) < 16
    vertical = np.asarray(L.RandomFlip("vertical", seed=3)(batch))
    assert all(np.array_equal(o, image[0]) or np.array_equal(o, image[0, ::-1]) for o in vertical)
    with pytest.raises(ValueError, match="unknown mode"):
        L.RandomFlip("diagonal")


@pytest.mark.slow
def test_fixed_transforms_equal_hand_computed_images():
    image = np.arange(20, dtype=np.float32).reshape(1, 4, 5, 1)
    square = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    # a quarter turn of a square image about its centre, resampled exactly
    quarter = np.asarray(L.RandomRotation((0.25, 0.25))(square))[0, :, :, 0]
    np.testing.assert_allclose(quarter, np.rot90(square[0, :, :, 0], k=1), atol=1e-4)
    # a shift by one row down and two columns left, nearest fill at the edges
    shift = L.RandomTranslation((0.25, 0.25), (-0.4, -0.4), fill_mode="nearest")
    padded = np.pad(image[0, :, :, 0], 3, mode="edge")
    np.testing.assert_allclose(np.asarray(shift(image))[0, :, :, 0], padded[2:6, 5:10], atol=1e-4)
    # zooming out by 2 about the centre: output (x, y) samples (2x - 2, 2y - 1.5)
    zoom = np.asarray(L.RandomZoom((1.0, 1.0), fill_mode="constant")(image))[0, :, :, 0]
    np.testing.assert_allclose(zoom[1, 2], (image[0, 0, 2, 0] + image[0, 1, 2, 0]) / 2, atol=1e-4)
    np.testing.assert_allclose(zoom[2, 2], (image[0, 2, 2, 0] + image[0, 3, 2, 0]) / 2, atol=1e-4)
    assert zoom[0, 0] == 0.0  # outside the image: the constant fill
    # brightness with a fixed delta, clipped to the value range
    bright = np.asarray(L.RandomBrightness((0.1, 0.1), value_range=(0, 10))(image))
    np.testing.assert_allclose(bright, np.clip(image + 1.0, 0, 10), rtol=1e-6)


@pytest.mark.slow
def test_contrast_scales_deviations_from_each_channel_mean():
    layer = L.RandomContrast((0.3, 0.6), value_range=(-1e9, 1e9), seed=2)
    out = np.asarray(layer(IMAGES))
    mean = IMAGES.mean(axis=(1, 2), keepdims=True)
    scale = (out - mean) / (IMAGES - mean)
    per_image = scale.reshape(8, -1)
    np.testing.assert_allclose(per_image, per_image[:, :1] * np.ones_like(per_image), rtol=1e-3)
    assert np.all((per_image[:, 0] >= 0.7 - 1e-4) & (per_image[:, 0] <= 1.6 + 1e-4))
    assert L.RandomContrast(0.5).factor == (0.0, 0.5)  # Keras 3 reads a number f as (0, f)


def test_factor_checks_and_config_round_trip():
    with pytest.raises(ValueError, match=r"in the range \[-1.0, 1.0\]"):
        L.RandomRotation(1.5)
    with pytest.raises(ValueError, match=r"\(-1.0, 1.0\]"):
        L.RandomZoom((-1.0, 0.5))
    with pytest.raises(NotImplementedError, match="fill_mode"):
        L.RandomTranslation(0.1, 0.1, fill_mode="mirror")
    layer = L.RandomZoom((-0.2, 0.3), 0.1, fill_mode="constant", fill_value=3.0, seed=4)
    clone = L.RandomZoom.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    np.testing.assert_array_equal(np.asarray(clone(IMAGES)), np.asarray(layer(IMAGES)))


@pytest.mark.slow
def test_a_model_with_augmentation_trains_in_fit_and_predicts_without_it():
    augment = sl.Sequential(
        [
            L.RandomFlip("horizontal", seed=1),
            L.RandomRotation(0.1, seed=2),
            L.RandomZoom(0.1, seed=3),
            L.RandomTranslation(0.1, 0.1, seed=4),
            L.RandomContrast(0.2, seed=5),
            L.RandomBrightness(0.1, seed=6),
        ]
    )
    inputs = sl.Input((5, 6, 2))
    x = augment(inputs)
    outputs = L.Dense(1)(L.Flatten()(L.Rescaling(1 / 255.0)(x)))
    model = sl.Model(inputs, outputs)
    model.compile(sl.optimizers.SGD(0.01), "mse")
    y = IMAGES.mean(axis=(1, 2, 3))[:, None] / 255.0
    history = model.fit(IMAGES, y, epochs=3, batch_size=4, verbose=0, shuffle=False)
    losses = history.history["loss"]
    assert len(losses) == 3 and np.all(np.isfinite(losses))
    plain = sl.Model(inputs, model.layers[-1](model.layers[-2](model.layers[-3](inputs))))
    np.testing.assert_allclose(
        model.predict(IMAGES, verbose=0), plain.predict(IMAGES, verbose=0), rtol=1e-5
    )


def test_fit_applies_the_augmentation_with_new_draws_each_step():
    """With a learning rate of 0, fit's losses show what the training step computed."""
    x = IMAGES[:4, :, :, :1] / 255.0
    y = np.zeros((4, 1), np.float32)
    inputs = sl.Input((5, 6, 1))
    shifted = L.RandomBrightness((0.2, 0.2), value_range=(0, 1e4))(inputs)  # delta 2000
    turned = L.RandomRotation(0.5, fill_mode="constant", seed=3)(shifted)
    outputs = L.Dense(1, kernel_initializer="ones")(L.Flatten()(turned))
    model = sl.Model(inputs, outputs)
    model.compile(sl.optimizers.SGD(0.0), "mse")
    losses = model.fit(x, y, epochs=2, batch_size=4, verbose=0, shuffle=False).history["loss"]
    unturned = np.mean((x + 2000.0).sum(axis=(1, 2, 3)) ** 2)
    assert losses[0] != losses[1]  # other rotations in the second step
    assert all(0 < loss < 1.01 * unturned for loss in losses)  # the delta was added
    evaluated = model.evaluate(x, y, verbose=0)  # inference: no delta, no rotation
    np.testing.assert_allclose(evaluated, np.mean(x.sum(axis=(1, 2, 3)) ** 2), rtol=1e-5)
