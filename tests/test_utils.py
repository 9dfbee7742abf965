"""`sl.utils`: Keras's data helpers (to_categorical, pad_sequences)."""

import numpy as np
import pytest

import sluice as sl


def test_to_categorical_one_hot_rows():
    got = sl.utils.to_categorical([[0], [2], [1]], num_classes=4)
    np.testing.assert_array_equal(got, np.eye(4, dtype="float32")[[0, 2, 1]])
    assert sl.utils.to_categorical(np.array([1, 0])).shape == (2, 2)


@pytest.mark.parametrize(
    "kwargs, want",
    [
        ({}, [[0, 0, 1, 2, 3], [0, 0, 0, 0, 4], [5, 6, 7, 8, 9]]),
        ({"maxlen": 2}, [[2, 3], [0, 4], [8, 9]]),
        ({"maxlen": 2, "truncating": "post"}, [[1, 2], [0, 4], [5, 6]]),
        (
            {"maxlen": 4, "padding": "post", "value": -1},
            [[1, 2, 3, -1], [4, -1, -1, -1], [6, 7, 8, 9]],
        ),
    ],
)
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


@pytest.mark.parametrize(
    "sequences, kwargs, match",
    [
        ([[1]], {"padding": "middle"}, "padding must be 'pre' or 'post'"),
        ([[1]], {"truncating": "both"}, "truncating must be"),
        ([[1]], {"maxlen": -2}, "maxlen must be None or >= 0"),
        ([[1], 7], {}, r"sequences\[1\] is .* not a sequence"),
        ([[[1, 2]], [[1, 2, 3]]], {}, r"sequences\[1\] has elements of shape \(3,\)"),
    ],
)
def test_pad_sequences_bad_input_is_a_clear_error(sequences, kwargs, match):
    with pytest.raises(ValueError, match=match):
        sl.utils.pad_sequences(sequences, **kwargs)


def _decode_png(data):
    """Pixels of an 8-bit PNG whose rows all use filter 0 (what encode_png writes)."""
    import struct
    import zlib

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = {}, 8
    while at < len(data):
        (length,), kind = struct.unpack(">I", data[at : at + 4]), data[at + 4 : at + 8]
        body = data[at + 8 : at + 8 + length]
        assert struct.unpack(">I", data[at + 8 + length : at + 12 + length])[0] == zlib.crc32(
            kind + body
        )
        chunks[kind] = chunks.get(kind, b"") + body
        at += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    channels = {0: 1, 2: 3}[color]
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, -1)
    assert depth == 8 and np.all(raw[:, 0] == 0)
    return raw[:, 1:].reshape(height, width, channels)


def test_png_files_round_trip_grey_and_rgb(tmp_path):
    from sluice._keras.utils import png

    rgb = np.random.default_rng(0).integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    png.write_png(str(tmp_path / "x.png"), rgb)
    np.testing.assert_array_equal(_decode_png((tmp_path / "x.png").read_bytes()), rgb)
    np.testing.assert_array_equal(_decode_png(png.encode_png(rgb[..., 0]))[..., 0], rgb[..., 0])
    with pytest.raises(ValueError, match="uint8"):
        png.encode_png(rgb.astype(np.float32))
