"""Hashing: FarmHash's Fingerprint64 of the decimal text (values from the pyfarmhash binding
of Google's C++ FarmHash, written down here), bins, mask value, encodings, in a model."""

import numpy as np
import pytest

import sluice as sl
from sluice._keras.layers.preprocessing import farmhash

# Fingerprint64 of each string, as Google's FarmHash computes it (one per length class)
FINGERPRINTS = {
    b"": 11160318154034397263,
    b"7": 9813730750082856088,
    b"-42": 16304005864742066718,
    b"1234567": 7403371938570208423,
    b"-9223372036854775808": 1493431938208774112,
    b"12345678901234567890": 8566703976626537749,
}


@pytest.mark.parametrize("text", sorted(FINGERPRINTS))
def test_fingerprint64_equals_farmhash(text):
    assert farmhash.fingerprint64(text) == FINGERPRINTS[text]


def test_hashing_bins_are_fingerprints_modulo_the_bins():
    values = np.array([[0, 1, 2, 3], [4, 5, -1, 1000]])
    got = np.asarray(sl.layers.Hashing(num_bins=7)(values))
    assert got.dtype == np.int64
    assert got.tolist() == [[2, 5, 5, 2], [6, 1, 4, 0]]  # FarmHash's values modulo 7
    floats = np.asarray(sl.layers.Hashing(num_bins=7)(np.array([1.9, -1.2])))
    assert floats.tolist() == [5, 4]  # truncated to 1 and -1 first, as Keras casts
    masked = np.asarray(sl.layers.Hashing(num_bins=8, mask_value=3)(values))
    assert masked[0, 3] == 0 and (masked[masked != 0] >= 1).all()
    hot = np.asarray(sl.layers.Hashing(num_bins=7, output_mode="multi_hot")(values))
    np.testing.assert_array_equal(hot, [[0, 0, 1, 0, 0, 1, 0], [1, 1, 0, 0, 1, 0, 1]])
    with pytest.raises(NotImplementedError, match="salt"):
        sl.layers.Hashing(num_bins=3, salt=1)
