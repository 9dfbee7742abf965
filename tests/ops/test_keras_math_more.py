"""`sl.ops` functions of Keras's `ops/math.py`: segment_min/prod, the Fourier transforms on
(real, imag) pairs, extract_sequences, cdist, gammainc, view_as_complex/real; values against
NumPy and SciPy, on arrays and graph tensors, and gradients."""

import numpy as np
import pytest

import sluice as sl
from tests.ops.table import check_case_gradients, check_graph, check_values

ops = sl.ops
RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4))
Y = RNG.normal(size=(3, 4))
Z = X + 1j * Y
R6 = np.fft.rfft(X, 6)
IDS = np.array([0, 0, 1])


def _gammainc(a, x):  # P(a, x) by its series x^a e^-x / Gamma(a + 1) sum x^k / (a+1)...(a+k)
    from math import lgamma

    term = np.ones_like(x)
    total = np.ones_like(x)
    for k in range(1, 200):
        term = term * x / (a + k)
        total = total + term
    log_front = a * np.log(x) - x - np.vectorize(lgamma)(a + 1)
    return np.exp(log_front) * total


def _parts(z):
    return (z.real, z.imag)


CASES = [
    ("segment_min", ops.segment_min, (X, IDS), {}, np.stack([X[:2].min(0), X[2]])),
    ("segment_prod", ops.segment_prod, (X, IDS), {"num_segments": 3},
     np.stack([X[:2].prod(0), X[2], np.ones(4)])),
    ("fft", lambda r, i: ops.fft((r, i)), (X, Y), {}, _parts(np.fft.fft(Z))),
    ("fft2", lambda r, i: ops.fft2((r, i)), (X, Y), {}, _parts(np.fft.fft2(Z))),
    ("ifft2", lambda r, i: ops.ifft2((r, i)), (X, Y), {}, _parts(np.fft.ifft2(Z))),
    ("rfft", ops.rfft, (X,), {}, _parts(np.fft.rfft(X))),
    ("rfft_vector", ops.rfft, (X[0],), {}, _parts(np.fft.rfft(X[0]))),
    ("fft_vector", lambda r, i: ops.fft((r, i)), (X[0], Y[0]), {}, _parts(np.fft.fft(Z[0]))),
    ("rfft_padded", ops.rfft, (X, 7), {}, _parts(np.fft.rfft(X, 7))),
    ("rfft_cut", ops.rfft, (X, 3), {}, _parts(np.fft.rfft(X, 3))),
    ("irfft", lambda r, i: ops.irfft((r, i)), (R6.real, R6.imag), {}, np.fft.irfft(R6)),
    ("irfft_odd", lambda r, i: ops.irfft((r, i), 5), (R6.real, R6.imag), {}, np.fft.irfft(R6, 5)),
    ("irfft_long", lambda r, i: ops.irfft((r, i), 9), (R6.real, R6.imag), {},
     np.fft.irfft(R6, 9)),
    ("extract_sequences", ops.extract_sequences, (X, 2, 1), {},
     np.stack([X[:, i : i + 2] for i in range(3)], 1)),
    ("cdist", ops.cdist, (X, Y[:2]), {},
     np.sqrt(((X[:, None] - Y[None, :2]) ** 2).sum(-1))),
    ("gammainc", ops.gammainc, (np.abs(X) + 0.5, np.abs(Y)), {},
     _gammainc(np.abs(X) + 0.5, np.abs(Y))),
    ("view_as_complex", ops.view_as_complex, (np.stack([X, Y], -1),), {}, Z),
    ("view_as_real", ops.view_as_real, (Z,), {}, np.stack([X, Y], -1)),
]  # fmt: skip


@pytest.mark.parametrize(
    "fn, args, kwargs, want", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_on_values(fn, args, kwargs, want):
    check_values(fn, args, kwargs, want, rtol=1e-6, atol=1e-12)


@pytest.mark.slow  # one graph of every case (the values run the same graph code on constants)
def test_on_graph_tensors():
    check_graph(CASES, rtol=1e-10, atol=1e-12)


GRADIENT_CASES = [
    ("fft2", lambda r, i: ops.fft2((r, i)), [X, Y], [0, 1]),
    ("irfft", lambda r, i: ops.irfft((r, i), 5), [R6.real, R6.imag], [0, 1]),
    ("cdist", ops.cdist, [X, Y[:2]], [0, 1]),
    ("gammainc", lambda x: ops.gammainc(np.abs(X) + 0.5, x), [np.abs(Y) + 0.1], [0]),
    ("segment_prod", lambda x: ops.segment_prod(x, IDS), [X], [0]),
]


@pytest.mark.slow  # central differences: a session run per input element
@pytest.mark.parametrize(
    "fn, args, wrt", [c[1:] for c in GRADIENT_CASES], ids=[c[0] for c in GRADIENT_CASES]
)
def test_gradients(fn, args, wrt):
    check_case_gradients(fn, args, {}, wrt)


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(ValueError, match="real, imag"):
        ops.fft(X)
    with pytest.raises(ValueError, match="last axis of x must be 2"):
        ops.view_as_complex(X)
