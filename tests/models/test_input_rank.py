"""Keras 3's trailing axis of size 1: a functional model (or a Sequential with its input shape)
adds it to inputs that lack it and removes it from inputs that have one too many; a subclassed
model's call receives its inputs as given."""

import numpy as np
import pytest

import sluice as sl
from sluice._keras.models import input_rank


def _sum_model(shape):
    """A functional model whose output is the sum of its input over all but the batch axis."""
    x = sl.Input(shape)
    y = sl.layers.Lambda(lambda t: sl.reduce_sum(t, axis=list(range(1, len(shape) + 1))))(x)
    return sl.Model(x, y)


def test_a_missing_trailing_axis_is_added_in_predict_fit_and_evaluate():
    x = sl.Input((4, 1))
    model = sl.Model(x, sl.layers.Dense(1)(sl.layers.Flatten()(x)))
    model.compile("sgd", "mse")
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected = model.predict(data[..., None], verbose=0)
    np.testing.assert_allclose(model.predict(data, verbose=0), expected)
    history = model.fit(
        data, np.zeros((3, 1)), epochs=2, verbose=0, validation_data=(data, np.zeros((3, 1)))
    )
    assert len(history.history["val_loss"]) == 2
    assert np.isfinite(model.evaluate(data, np.zeros((3, 1)), verbose=0))
    assert model.train_on_batch(data, np.zeros((3, 1))) >= 0


def test_an_input_of_shape_one_takes_vectors():
    model = sl.Sequential([sl.Input((1,)), sl.layers.Dense(1, kernel_initializer="ones")])
    np.testing.assert_allclose(model.predict(np.array([1.0, 2.0, 3.0]), verbose=0), [[1], [2], [3]])


def test_an_extra_trailing_axis_is_removed():
    model = _sum_model((3,))
    out = model.predict(np.ones((2, 3, 1), np.float32), verbose=0)
    np.testing.assert_allclose(out, [3.0, 3.0])
    seq = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2)])
    assert seq.predict(np.ones((5, 3, 1)), verbose=0).shape == (5, 2)


def test_other_ranks_are_an_error_naming_the_input():
    model = _sum_model((3, 2))
    with pytest.raises(ValueError, match=r"input 0 .*expected shape \(None, 3, 2\).*\(2, 3\)"):
        model.predict(np.ones((2, 3)), verbose=0)  # the Input's last dim is 2, not 1
    with pytest.raises(ValueError, match="incompatible shape"):
        model.predict(np.ones((2, 3, 2, 2, 1, 1)), verbose=0)


def test_several_inputs_and_dicts():
    a, b = sl.Input((2, 1), name="a"), sl.Input((2,), name="b")
    out = sl.layers.Add()([sl.layers.Flatten()(a), b])
    model = sl.Model({"a": a, "b": b}, out)
    got = model.predict({"a": np.ones((3, 2)), "b": np.ones((3, 2, 1))}, verbose=0)
    np.testing.assert_allclose(got, np.full((3, 2), 2.0))
    listed = sl.Model([a, b], out)
    np.testing.assert_allclose(listed.predict([np.ones((3, 2)), np.ones((3, 2))], verbose=0), got)


def test_a_model_called_on_tensors_adjusts_them():
    inner = _sum_model((3, 1))
    outer_input = sl.Input((3,))
    outer = sl.Model(outer_input, inner(outer_input))
    assert outer.output_shape == (None,)
    np.testing.assert_allclose(outer.predict(np.ones((2, 3)), verbose=0), [3.0, 3.0])
    last_axis_sum = sl.layers.Lambda(lambda t: sl.reduce_sum(t, axis=-1))
    seq = sl.Sequential([sl.Input((3, 1)), last_axis_sum])
    assert np.asarray(seq(np.ones((2, 3), np.float32))).shape == (2, 3)  # through Sequential.call
    assert seq(sl.Input((3,))).shape.as_list() == [None, 3]  # (None, 3) -> (None, 3, 1) -> sum
    assert seq(sl.Input((3, 1, 1))).shape.as_list() == [None, 3]  # the extra axis removed
    np.testing.assert_allclose(np.asarray(inner(np.ones((2, 3), np.float32))), [3.0, 3.0])


def test_masks_survive_the_adjustment():
    x = sl.Input((4,))
    masked = sl.layers.Masking(mask_value=0.0)(sl.layers.Reshape((4, 1))(x))
    squeezed = input_rank.adjust_tensors(_sum_model((4,)), masked)
    assert squeezed.shape.as_list() == [None, 4]
    assert sl.backend.int_shape(squeezed) == (None, 4)
    from sluice._keras.layers import tracking

    assert tracking.get_mask(squeezed) is tracking.get_mask(masked) is not None


def test_subclassed_models_receive_inputs_as_given():
    class Total(sl.Model):
        def call(self, x):
            return sl.reduce_sum(x, axis=-1)

    model = Total()
    model.build((None, 3, 1))
    assert not input_rank.follows_input_rank(model)
    assert input_rank.adjust_arrays(model, [np.ones((2, 3))])[0].shape == (2, 3)
    assert input_rank.follows_input_rank(sl.Sequential([sl.layers.Dense(1)]))
    assert input_rank.follows_input_rank(_sum_model((2,)))


def test_inputs_are_converted_to_their_inputs_dtype():
    # Keras 3 converts a functional model's inputs to its Inputs' dtypes: uint8 pixels
    # (the custom training loop guide feeds raw MNIST) to a float32 model
    inputs = sl.Input((3,))
    model = sl.Model(inputs, sl.layers.Dense(1, kernel_initializer="ones")(inputs))
    pixels = np.array([[1, 2, 255]], np.uint8)
    np.testing.assert_array_equal(model(pixels), [[258.0]])
    np.testing.assert_array_equal(model.predict(pixels, verbose=0), [[258.0]])
    ids = sl.Input((2,), dtype="int32")  # an integer Input keeps its integers
    emb = sl.Model(ids, sl.layers.Embedding(5, 1, embeddings_initializer="ones")(ids))
    assert emb(np.array([[1, 4]], np.int64)).shape == (1, 2, 1)
