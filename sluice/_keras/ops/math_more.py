"""`keras.ops` functions of Keras's `ops/math.py` beyond `core`: segment_min and segment_prod,
Fourier transforms on (real, imaginary) pairs, framing of signals, distances, gammainc,
view_as_complex and view_as_real; graph code that `eager.keras_op` also runs at once.

The transforms are discrete Fourier transforms written as products with cosine and sine
matrices (exact to rounding, O(n^2) per axis, with gradients through the products), so the
transformed axes must have known lengths.

>>> real, imag = sl.ops.fft((np.array([1.0, 0.0, 0.0, 0.0]), np.zeros(4)))
>>> real
Array([1., 1., 1., 1.])
>>> sl.ops.extract_sequences(np.arange(5.0), 2, 2)
Array([[0., 1.],
       [2., 3.]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._keras.ops.core import _segments
from sluice._keras.ops.eager import floating, keras_op, known_rank, promoted, tensor
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.math import (
    bitwise_ops,
    einsum_ops,
    reduction_ops,
    segment_ops,
    unary_ops,
)

segment_min = _segments(segment_ops.unsorted_segment_min, "segment_min", "minimum")
segment_prod = _segments(segment_ops.unsorted_segment_prod, "segment_prod", "product")


def _times(x: Any, matrix: Any) -> Any:
    """x's last axis times a matrix (x of any rank, vectors included)."""
    return einsum_ops.tensordot(x, matrix, [[known_rank(x, "fft") - 1], [0]])


def _pair(x: Any, what: str) -> tuple[Any, Any]:
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(f"{what}: x must be a tuple (real, imag) of two arrays, got {type(x)}.")
    real, imag = promoted(floating(x[0]), floating(x[1]))
    if real.shape.rank != imag.shape.rank or not real.shape.is_compatible_with(imag.shape):
        raise ValueError(
            f"{what}: the real and imaginary parts must have one shape; got {real.shape} and "
            f"{imag.shape}."
        )
    return real, imag


def _length(x: Any, what: str, axis: int = -1) -> int:
    n = x.shape[axis] if x.shape.rank else None
    if n is None:
        raise ValueError(f"{what}: the length of the transformed axis of {x.shape} must be known.")
    return n


def _waves(n: int, m: int, dtype: Any, inverse: bool = False) -> tuple[Any, Any]:
    """cos and sin of 2 pi j k / n for j < n (rows) and k < m (columns)."""
    angles = 2 * np.pi * np.outer(np.arange(n), np.arange(m)) / n
    return tensor(np.cos(angles), dtype), tensor(np.sin(angles), dtype)


def _dft(real: Any, imag: Any, inverse: bool) -> tuple[Any, Any]:
    """The DFT (or the inverse, divided by n) of (real, imag) along the last axis."""
    n = _length(real, "fft")
    c, s = _waves(n, n, real.dtype)
    sign = 1.0 if inverse else -1.0  # e^{-i angle} forward
    re = _times(real, c) - sign * _times(imag, s)
    im = _times(imag, c) + sign * _times(real, s)
    if inverse:
        scale = tensor(1.0 / n, real.dtype)
        re, im = re * scale, im * scale
    return re, im


def _last_two(real: Any, imag: Any, inverse: bool) -> tuple[Any, Any]:
    rank = known_rank(real, "fft2")
    if rank < 2:
        raise ValueError(f"fft2: x must have at least 2 dimensions, got shape {real.shape}.")
    re, im = _dft(real, imag, inverse)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    re, im = _dft(array_ops.transpose(re, perm), array_ops.transpose(im, perm), inverse)
    return array_ops.transpose(re, perm), array_ops.transpose(im, perm)


@keras_op("fft")
def fft(x: Any) -> Any:
    """The discrete Fourier transform along the last axis of x = (real, imag); (real, imag)."""
    return _dft(*_pair(x, "fft"), inverse=False)


@keras_op("fft2")
def fft2(x: Any) -> Any:
    """The 2-D discrete Fourier transform over the last two axes of x = (real, imag)."""
    return _last_two(*_pair(x, "fft2"), inverse=False)


@keras_op("ifft2")
def ifft2(x: Any) -> Any:
    """The inverse 2-D discrete Fourier transform over the last two axes of (real, imag)."""
    return _last_two(*_pair(x, "ifft2"), inverse=True)


def _fit(x: Any, n: int) -> Any:
    """x cut or padded with zeros to length n along its last axis."""
    length = _length(x, "rfft")
    if length >= n:
        return x[..., :n]
    rank = known_rank(x, "rfft")
    return join_ops.pad(x, [[0, 0]] * (rank - 1) + [[0, n - length]])


@keras_op("rfft")
def rfft(x: Any, fft_length: int | None = None) -> Any:
    """The DFT of the real x along its last axis (cut or zero-padded to `fft_length`): its
    fft_length // 2 + 1 non-negative frequencies, as (real, imag)."""
    x = floating(x)
    n = _length(x, "rfft") if fft_length is None else int(fft_length)
    x = _fit(x, n)
    c, s = _waves(n, n // 2 + 1, x.dtype)
    return _times(x, c), -_times(x, s)


@keras_op("irfft")
def irfft(x: Any, fft_length: int | None = None) -> Any:
    """The real signal of `fft_length` entries (default 2 (m - 1)) whose `rfft` is x =
    (real, imag) of m frequencies (more are cut, fewer padded with zeros; the imaginary parts
    of the zero and Nyquist frequencies are ignored, as NumPy)."""
    real, imag = _pair(x, "irfft")
    m = _length(real, "irfft")
    n = 2 * (m - 1) if fft_length is None else int(fft_length)
    k = n // 2 + 1
    real, imag = _fit(real, k), _fit(imag, k)
    weights = np.full(k, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    angles = 2 * np.pi * np.outer(np.arange(k), np.arange(n)) / n
    c = tensor(weights[:, None] * np.cos(angles) / n, real.dtype)
    s = tensor(weights[:, None] * np.sin(angles) / n, real.dtype)
    return _times(real, c) - _times(imag, s)


@keras_op("extract_sequences")
def extract_sequences(x: Any, sequence_length: int, sequence_stride: int) -> Any:
    """The frames of x along its last axis: [..., count, sequence_length], frame i starting at
    i * sequence_stride, count = 1 + (length - sequence_length) // sequence_stride."""
    x = tensor(x)
    length = _length(x, "extract_sequences")
    count = 1 + (length - sequence_length) // sequence_stride
    frames = [
        x[..., i * sequence_stride : i * sequence_stride + sequence_length] for i in range(count)
    ]
    return join_ops.stack(frames, axis=-2)


@keras_op("cdist")
def cdist(x1: Any, x2: Any) -> Any:
    """The Euclidean distances between the rows of x1 [..., N, D] and of x2 [..., M, D]:
    [..., N, M]."""
    a, b = promoted(floating(x1), floating(x2))
    difference = array_ops.expand_dims(a, -2) - array_ops.expand_dims(b, -3)
    return unary_ops.sqrt(reduction_ops.reduce_sum(difference * difference, axis=-1))


@keras_op("gammainc")
def gammainc(x1: Any, x2: Any) -> Any:
    """The regularized lower incomplete gamma function P(x1, x2) (a gradient for x2)."""
    return bitwise_ops.gammainc(*promoted(floating(x1), floating(x2)))


@keras_op("view_as_complex")
def view_as_complex(x: Any) -> Any:
    """The complex numbers x[..., 0] + i x[..., 1] of a real x whose last axis is 2."""
    x = floating(x)
    if x.shape.rank is None or x.shape[-1] != 2:
        raise ValueError(f"view_as_complex: the last axis of x must be 2, got shape {x.shape}.")
    kind = np.dtype("complex128") if x.dtype == dtypes.float64 else dtypes.complex64
    unit = tensor(np.asarray(1j, kind))
    return fill_ops.cast(x[..., 0], kind) + fill_ops.cast(x[..., 1], kind) * unit


@keras_op("view_as_real")
def view_as_real(x: Any) -> Any:
    """The real and imaginary parts of a complex x, as a last axis of 2."""
    x = tensor(x)
    if x.dtype.kind != "c":
        raise ValueError(f"view_as_real: x must be complex, got {x.dtype.name}.")
    return join_ops.stack([bitwise_ops.real(x), bitwise_ops.imag(x)], axis=-1)
