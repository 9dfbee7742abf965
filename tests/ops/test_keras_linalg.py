"""`sl.ops.linalg` (also at `sl.ops.<name>`), `logdet` and `slogdet` against NumPy and JAX."""

import jax.scipy.linalg as jsl
import numpy as np
import pytest

import sluice as sl
from tests.ops.table import check_case_gradients, check_graph, check_values

ops = sl.ops
RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 3))
SPD = A @ A.T + 3 * np.eye(3)
L = np.linalg.cholesky(SPD)
B = RNG.normal(size=(3, 2))
W = RNG.normal(size=(4, 3))
BATCH = RNG.normal(size=(2, 3, 3))


def _lstsq(a, b):
    return np.linalg.lstsq(a, b, rcond=None)[0]


CASES = [
    ("cholesky", ops.cholesky, (SPD,), {}, L),
    ("cholesky_upper", ops.cholesky, (SPD,), {"upper": True}, L.T),
    ("cholesky_inverse", ops.cholesky_inverse, (L,), {}, np.linalg.inv(SPD)),
    ("cholesky_inverse_upper", ops.cholesky_inverse, (L.T,), {"upper": True},
     np.linalg.inv(SPD)),
    ("det", ops.det, (BATCH,), {}, np.linalg.det(BATCH)),
    ("inv", ops.inv, (A,), {}, np.linalg.inv(A)),
    ("eigh", lambda x: ops.eigh(x)[0], (SPD,), {}, np.linalg.eigh(SPD)[0]),  # vectors: up to sign
    ("solve", ops.solve, (A, B), {}, np.linalg.solve(A, B)),
    ("solve_vector", ops.solve, (A, B[:, 0]), {}, np.linalg.solve(A, B[:, 0])),
    ("solve_triangular", ops.solve_triangular, (A, B), {}, np.linalg.solve(np.triu(A), B)),
    ("solve_triangular_lower", ops.solve_triangular, (A, B[:, 0]), {"lower": True},
     np.linalg.solve(np.tril(A), B[:, 0])),
    ("svd_values", ops.svd, (W,), {"compute_uv": False}, np.linalg.svd(W, compute_uv=False)),
    ("pinv", ops.pinv, (W,), {}, np.linalg.pinv(W)),
    ("lstsq", ops.lstsq, (W, W @ B[:, :1] + 0.1), {}, _lstsq(W, W @ B[:, :1] + 0.1)),
    ("matrix_rank", ops.matrix_rank, (np.ones((3, 3)),), {}, np.int32(1)),
    ("matrix_rank_full", ops.matrix_rank, (BATCH,), {}, np.array([3, 3])),
    ("matrix_power", ops.matrix_power, (A, 3), {}, np.linalg.matrix_power(A, 3)),
    ("matrix_power_negative", ops.matrix_power, (A, -2), {}, np.linalg.matrix_power(A, -2)),
    ("matrix_power_ints", ops.matrix_power, (np.eye(2, dtype=np.int32) * 2, 3), {},
     np.eye(2) * 8),
    ("logdet", ops.logdet, (SPD,), {}, np.linalg.slogdet(SPD)[1]),
    ("slogdet", ops.slogdet, (A,), {}, tuple(np.linalg.slogdet(A))),
    ("lu_factor", ops.lu_factor, (A,), {}, (jsl.lu_factor(A)[0], jsl.lu_factor(A)[1])),
]  # fmt: skip


@pytest.mark.parametrize(
    "fn, args, kwargs, want", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_on_values(fn, args, kwargs, want):
    check_values(fn, args, kwargs, want, rtol=1e-5, atol=1e-6)  # lu_factor's JAX reference: f32


def test_decompositions_reconstruct_their_input():
    q, r = ops.qr(W)
    assert q.shape == (4, 3) and r.shape == (3, 3)
    np.testing.assert_allclose(q @ r, W, atol=1e-12)
    q, r = ops.qr(W, mode="complete")
    assert q.shape == (4, 4) and r.shape == (4, 3)
    np.testing.assert_allclose(q @ r, W, atol=1e-12)
    u, s, vh = ops.svd(W)
    assert (u.shape, s.shape, vh.shape) == ((4, 4), (3,), (3, 3))
    u, s, vh = ops.svd(W, full_matrices=False)
    np.testing.assert_allclose((u * s) @ vh, W, atol=1e-12)
    w, v = ops.eigh(SPD)
    np.testing.assert_allclose(SPD @ v, v * w, atol=1e-12)
    w, v = ops.eig(A)
    assert w.dtype == np.complex128 and v.dtype == np.complex128
    np.testing.assert_allclose(A @ v, v * w, atol=1e-12)
    np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(A)))


@pytest.mark.slow  # one graph of every case (the values run the same graph code on constants)
def test_on_graph_tensors():
    check_graph(CASES, rtol=1e-10, atol=1e-12)


@pytest.mark.slow  # central differences: a session run per input element
@pytest.mark.parametrize(
    "fn, args, wrt",
    [
        (ops.cholesky_inverse, [L], [0]),
        (ops.solve, [A, B[:, 0]], [0, 1]),
        (ops.pinv, [W], [0]),
        (lambda a: ops.matrix_power(a, -2), [A], [0]),
    ],
    ids=["cholesky_inverse", "solve_vector", "pinv", "matrix_power"],
)
def test_gradients(fn, args, wrt):
    check_case_gradients(fn, args, {}, wrt)


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(ValueError, match="rank >= 2"):
        ops.inv(np.ones(3))
    with pytest.raises(ValueError, match="mode"):
        ops.qr(W, mode="r")
