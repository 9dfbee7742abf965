"""`sl.utils`: Keras's data helpers (to_categorical, pad_sequences)."""

import numpy as np
import pytest

import sluice as sl


def test_to_categorical_one_hot_rows():
    got = sl.utils.to_categorical([[0], [2], [1]], num_classes=4)
    np.testing.assert_array_equal(got, np.eye(4, dtype="float32")[[0, 2, 1]])
    assert sl.utils.to_categorical(np.array([1, 0])).shape == (2, 2)


@pytest.mark.parametrize("kwargs, want", [
    ({}, [[0, 0, 1, 2, 3], [0, 0, 0, 0, 4], [5, 6, 7, 8, 9]]),
    ({"maxlen": 2}, [[2, 3], [0, 4], [8, 9]]),
    ({"maxlen": 2, "truncating": "post"}, [[1, 2], [0, 4], [5, 6]]),
    ({"maxlen": 4, "padding": "post", "value": -1}, [[1, 2, 3, -1], [4, -1, -1, -1],
                                                     [6, 7, 8, 9]]),
])
def test_pad_sequences_pads_and_truncates_as_keras(kwargs, want):
    got = sl.utils.pad_sequences([[1, 2, 3], [4], [5, 6, 7, 8, 9]], **kwargs)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_pad_sequences_of_vectors_empty_sequences_and_dtypes():
    got = sl.utils.pad_sequences([[[1, 2], [3, 4]], [], [[5, 6]]], dtype="float32")
    assert got.shape == (3, 2, 2) and got.dtype == np.float32
    np.testing.assert_array_equal(got[2], [[0, 0], [5, 6]])
    assert sl.utils.pad_sequences([[1, 2]], maxlen=0).shape == (1, 0)
    assert sl.utils.pad_sequences([], maxlen=3).shape == (0, 3)


@pytest.mark.parametrize("sequences, kwargs, match", [
    ([[1]], {"padding": "middle"}, "padding must be 'pre' or 'post'"),
    ([[1]], {"truncating": "both"}, "truncating must be"),
    ([[1]], {"maxlen": -2}, "maxlen must be None or >= 0"),
    ([[1], 7], {}, r"sequences\[1\] is .* not a sequence"),
    ([[[1, 2]], [[1, 2, 3]]], {}, r"sequences\[1\] has elements of shape \(3,\)"),
])
def test_pad_sequences_bad_input_is_a_clear_error(sequences, kwargs, match):
    with pytest.raises(ValueError, match=match):
        sl.utils.pad_sequences(sequences, **kwargs)
