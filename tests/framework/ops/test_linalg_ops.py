"""TF1 linear algebra and contractions (issue 16): matrix_inverse, matrix_determinant,
matrix_solve, matrix_triangular_solve, cholesky, qr, svd, self_adjoint_eig, norm, einsum,
tensordot, cross.

As TF 1.x's linalg tests: values against NumPy at 1e-6 (one graph, run once per engine, with the
matrices fed so the compiled engine lowers the ops), the structure of returned values, TF's error
types at graph construction, and gradients against float64 central differences (TF1's
linalg_grad rules; the interpreted engine's gradient runs are in the slow set).
"""

from __future__ import annotations

import numpy as np
import pytest

import sluice as sl
from sluice.framework.autodiff.gradients import gradients
from tests.framework.ops.value_tables import ENGINES as VALUE_ENGINES
from tests.framework.ops.value_tables import (
    check_gradient_case,
    check_value,
    gradient_table_runner,
    value_table_runner,
)

ENGINES = ["compiled", "interpreted"]
RNG = np.random.default_rng(116)
A = RNG.normal(size=(2, 3, 3)) + 3 * np.eye(3)  # a batch of well-conditioned matrices
B = RNG.normal(size=(2, 3, 2))
SPD = A @ np.swapaxes(A, -1, -2) + np.eye(3)
TALL = RNG.normal(size=(4, 3))
V3 = RNG.normal(size=(2, 3))
W3 = RNG.normal(size=(2, 3))


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# name: (build from the fed batch `a`, reference from the NumPy batch)
VALUES = {
    "matrix_inverse": (sl.matrix_inverse, np.linalg.inv),
    "matrix_inverse_adjoint": (
        lambda a: sl.matrix_inverse(a, adjoint=True),
        lambda a: np.linalg.inv(np.swapaxes(a, -1, -2)),
    ),
    "matrix_determinant": (sl.matrix_determinant, np.linalg.det),
    "matrix_solve": (lambda a: sl.matrix_solve(a, B), lambda a: np.linalg.solve(a, B)),
    "matrix_solve_adjoint": (
        lambda a: sl.matrix_solve(a, B, adjoint=True),
        lambda a: np.linalg.solve(np.swapaxes(a, -1, -2), B),
    ),
    "triangular_solve_lower": (
        lambda a: sl.matrix_triangular_solve(a, B),
        lambda a: np.linalg.solve(np.tril(a), B),
    ),
    "triangular_solve_upper_adjoint": (
        lambda a: sl.matrix_triangular_solve(a, B, lower=False, adjoint=True),
        lambda a: np.linalg.solve(np.swapaxes(np.triu(a), -1, -2), B),
    ),
    "cholesky": (
        lambda a: sl.cholesky(sl.matmul(a, a, transpose_b=True) + np.eye(3)),
        lambda a: np.linalg.cholesky(a @ np.swapaxes(a, -1, -2) + np.eye(3)),
    ),
    "qr_reconstructs": (lambda a: sl.matmul(*sl.qr(a)), lambda a: a),
    "qr_orthonormal": (
        lambda a: sl.matmul(sl.qr(a).q, sl.qr(a).q, transpose_a=True),
        lambda a: np.broadcast_to(np.eye(3), a.shape),
    ),
    "svd_values": (
        lambda a: sl.svd(a, compute_uv=False),
        lambda a: np.linalg.svd(a, compute_uv=False),
    ),
    "svd_reconstructs": (
        lambda a: sl.matmul(
            sl.svd(a)[1] * sl.expand_dims(sl.svd(a)[0], -2), sl.svd(a)[2], transpose_b=True
        ),
        lambda a: a,
    ),
    "self_adjoint_eig_values": (
        lambda a: sl.self_adjoint_eig(a + sl.matrix_transpose(a)).e,
        lambda a: np.linalg.eigvalsh(a + np.swapaxes(a, -1, -2)),
    ),
    "norm_euclidean": (sl.norm, lambda a: np.linalg.norm(a.reshape(-1))),
    "norm_vectors_1": (
        lambda a: sl.norm(a, ord=1, axis=-1),
        lambda a: np.linalg.norm(a, ord=1, axis=-1),
    ),
    "norm_vectors_inf_keepdims": (
        lambda a: sl.norm(a, ord=np.inf, axis=1, keepdims=True),
        lambda a: np.linalg.norm(a, ord=np.inf, axis=1, keepdims=True),
    ),
    "norm_vectors_p3": (
        lambda a: sl.norm(a, ord=3, axis=2),
        lambda a: np.sum(np.abs(a) ** 3, axis=2) ** (1 / 3),
    ),
    "norm_fro": (
        lambda a: sl.norm(a, ord="fro", axis=[-2, -1]),
        lambda a: np.linalg.norm(a, ord="fro", axis=(-2, -1)),
    ),
    "norm_matrix_1": (
        lambda a: sl.norm(a, ord=1, axis=(1, 2)),
        lambda a: np.linalg.norm(a, ord=1, axis=(1, 2)),
    ),
    "norm_matrix_inf": (
        lambda a: sl.norm(a, ord=np.inf, axis=(1, 2)),
        lambda a: np.linalg.norm(a, ord=np.inf, axis=(1, 2)),
    ),
    "norm_spectral": (
        lambda a: sl.norm(a, ord=2, axis=(1, 2)),
        lambda a: np.linalg.norm(a, ord=2, axis=(1, 2)),
    ),
    "einsum_batch_matmul": (
        lambda a: sl.einsum("bij,bjk->bik", a, B),
        lambda a: np.einsum("bij,bjk->bik", a, B),
    ),
    "einsum_ellipsis": (
        lambda a: sl.einsum("...ij,...jk", a, B),
        lambda a: np.einsum("...ij,...jk", a, B),
    ),
    "einsum_ellipsis_broadcast": (
        lambda a: sl.einsum("...ij,...j->...i", a, V3[:1]),
        lambda a: np.einsum("...ij,...j->...i", a, V3[:1]),
    ),
    "einsum_implicit_transpose": (lambda a: sl.einsum("bji", a), lambda a: np.einsum("bji", a)),
    "einsum_trace": (lambda a: sl.einsum("bii->b", a), lambda a: np.einsum("bii->b", a)),
    "einsum_outer_sum": (
        lambda a: sl.einsum("bij,k->ik", a, V3[0]),
        lambda a: np.einsum("bij,k->ik", a, V3[0]),
    ),
    "tensordot_int": (lambda a: sl.tensordot(a, B[0], 1), lambda a: np.tensordot(a, B[0], 1)),
    "tensordot_axes": (
        lambda a: sl.tensordot(a, B, [[0, 1], [0, 1]]),
        lambda a: np.tensordot(a, B, [[0, 1], [0, 1]]),
    ),
    "cross": (lambda a: sl.cross(a[0, :2], W3), lambda a: np.cross(a[0, :2], W3)),
}


@pytest.fixture(scope="module")
def computed():
    return value_table_runner(VALUES, A)


@pytest.mark.parametrize("engine", VALUE_ENGINES)
@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_match_numpy(computed, name, engine):
    check_value(computed(engine)[name], VALUES[name][1](A))


def test_structures_and_static_shapes():
    x = sl.placeholder(sl.float32, [None, 4, 3])
    q, r = sl.qr(x)
    assert type(sl.qr(x)).__name__ == "QrOutput" and sl.qr(x)._fields == ("q", "r")
    assert q.shape.as_list() == [None, 4, 3] and r.shape.as_list() == [None, 3, 3]
    full_q, full_r = sl.qr(x, full_matrices=True)
    assert full_q.shape.as_list() == [None, 4, 4] and full_r.shape.as_list() == [None, 4, 3]
    s, u, v = sl.svd(x)
    assert [t.shape.as_list() for t in (s, u, v)] == [[None, 3], [None, 4, 3], [None, 3, 3]]
    assert isinstance(sl.svd(x, compute_uv=False), sl.Tensor)
    square = sl.placeholder(sl.float32, [5, 2, 2])
    e, vectors = sl.self_adjoint_eig(square)
    assert sl.self_adjoint_eig(square)._fields == ("e", "v")
    assert e.shape.as_list() == [5, 2] and vectors.shape.as_list() == [5, 2, 2]
    assert sl.matrix_determinant(square).shape.as_list() == [5]
    assert sl.einsum("bij,bjk->bik", x, sl.zeros([7, 3, 2])).shape.as_list() == [7, 4, 2]
    assert sl.tensordot(x, sl.zeros([3, 6]), 1).shape.as_list() == [None, 4, 6]
    assert sl.norm(x, axis=-1).shape.as_list() == [None, 4]


@pytest.mark.parametrize("engine", ENGINES)
def test_svd_matches_numpy_up_to_signs(engine):
    x = sl.placeholder(sl.float64, TALL.shape)
    s, u, v = sl.svd(x, full_matrices=True)
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        got_s, got_u, got_v = sess.run([s, u, v], {x: TALL})
    want_u, want_s, want_vh = np.linalg.svd(TALL, full_matrices=True)
    _close(got_s, want_s)
    assert got_u.shape == (4, 4) and got_v.shape == (3, 3)
    _close(np.abs(got_v), np.abs(want_vh.T))  # v, not its adjoint, as TF1 returns it


# -- errors at graph construction, with TF's types ------------------------------------------------
ERRORS = {  # name: (build, exception type, message pattern)
    "inverse_not_square": (lambda: sl.matrix_inverse(np.zeros((2, 3))), ValueError, "square"),
    "inverse_vector": (lambda: sl.matrix_inverse(np.zeros(3)), ValueError, "rank >= 2"),
    "inverse_int": (lambda: sl.matrix_inverse(np.eye(2, dtype=np.int32)), TypeError, "floating"),
    "determinant_not_square": (
        lambda: sl.matrix_determinant(np.zeros((3, 2))),
        ValueError,
        "square",
    ),
    "solve_rows": (lambda: sl.matrix_solve(np.eye(3), np.zeros((2, 1))), ValueError, "rows"),
    "solve_dtypes": (
        lambda: sl.matrix_solve(np.eye(2), np.zeros((2, 1), np.float32)),
        TypeError,
        "dtype",
    ),
    "triangular_solve_batch": (
        lambda: sl.matrix_triangular_solve(A, np.zeros((3, 3, 1))),
        ValueError,
        "batch",
    ),
    "cholesky_not_square": (lambda: sl.cholesky(np.zeros((2, 3))), ValueError, "square"),
    "qr_vector": (lambda: sl.qr(np.zeros(3)), ValueError, "rank >= 2"),
    "eig_not_square": (lambda: sl.self_adjoint_eig(np.zeros((2, 3))), ValueError, "square"),
    "norm_ord": (lambda: sl.norm(A, ord=-1), ValueError, "vector norm"),
    "norm_matrix_ord": (lambda: sl.norm(A, ord=3, axis=[1, 2]), ValueError, "matrix norm"),
    "norm_axis": (lambda: sl.norm(A, axis=[0, 1, 2]), ValueError, "axis"),
    "norm_axis_repeated": (lambda: sl.norm(A, axis=[1, 1]), ValueError, "unique"),
    "einsum_rank": (lambda: sl.einsum("ij->ji", A), ValueError, "rank"),
    "einsum_inputs": (lambda: sl.einsum("ij,jk->ik", A[0]), ValueError, "inputs"),
    "einsum_sizes": (
        lambda: sl.einsum("ij,jk->ik", np.zeros((2, 3)), np.zeros((4, 2))),
        ValueError,
        "size",
    ),
    "einsum_output_letter": (
        lambda: sl.einsum("ij->ik", np.zeros((2, 3))),
        ValueError,
        "output subscript",
    ),
    "einsum_dtypes": (
        lambda: sl.einsum("i,i->", np.zeros(2), np.zeros(2, np.float32)),
        TypeError,
        "dtype",
    ),
    "tensordot_axes_count": (lambda: sl.tensordot(A, B, [[0, 1], [0]]), ValueError, "numbers"),
    "tensordot_sizes": (lambda: sl.tensordot(A, B, [[2], [2]]), ValueError, "size"),
    "cross_not_3": (lambda: sl.cross(np.zeros(2), np.zeros(2)), ValueError, "3"),
    "cross_shapes": (lambda: sl.cross(np.zeros((2, 3)), np.zeros((1, 3))), ValueError, "shape"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_at_graph_construction(name):
    build, error, pattern = ERRORS[name]
    with pytest.raises(error, match=pattern):
        build()


# -- gradients ------------------------------------------------------------------------------------
SMALL = RNG.normal(size=(2, 2)) + 2 * np.eye(2)
SMALL_RHS = RNG.normal(size=(2, 1))


def _symmetric(x):
    return sl.matmul(x, x, transpose_b=True) + np.eye(2)


def _svd_sign_free(x):
    """s, and the squares of u's and v's entries: functions of x that do not depend on the signs
    the decomposition picks for its vectors."""
    s, u, v = sl.svd(x)
    return sl.concat([s, sl.reshape(sl.square(u), [-1]), sl.reshape(sl.square(v), [-1])], 0)


GRADIENTS = {  # name: (build from placeholders, inputs)
    "matrix_inverse": (sl.matrix_inverse, [SMALL]),
    "matrix_determinant": (sl.matrix_determinant, [SMALL]),
    "matrix_solve": (sl.matrix_solve, [SMALL, SMALL_RHS]),
    "matrix_solve_adjoint": (lambda a, b: sl.matrix_solve(a, b, adjoint=True), [SMALL, SMALL_RHS]),
    "triangular_solve": (
        lambda a, b: sl.matrix_triangular_solve(a, b, lower=False),
        [SMALL, SMALL_RHS],
    ),
    "cholesky": (lambda x: sl.cholesky(_symmetric(x)), [SMALL]),
    "qr": (lambda x: sl.concat(list(sl.qr(x)), 0), [RNG.normal(size=(3, 2))]),
    "self_adjoint_eig": (
        lambda x: sl.concat(
            [
                sl.self_adjoint_eig(_symmetric(x)).e[None],
                sl.abs(sl.self_adjoint_eig(_symmetric(x)).v),
            ],
            0,
        ),
        [np.array([[2.0, 0.3], [0.1, 1.0]])],
    ),
    "norm_euclidean_axis": (lambda x: sl.norm(x, axis=1), [SMALL]),
    "norm_spectral": (lambda x: sl.norm(x, ord=2, axis=[0, 1]), [SMALL]),
    "svd_values": (lambda x: sl.svd(x, compute_uv=False), [RNG.normal(size=(3, 2))]),
    "svd_tall": (lambda x: _svd_sign_free(x), [RNG.normal(size=(3, 2))]),
    "svd_wide": (lambda x: _svd_sign_free(x), [RNG.normal(size=(2, 3))]),
    "svd_square": (lambda x: _svd_sign_free(x), [RNG.normal(size=(2, 2))]),
    "einsum_matmul": (lambda a, b: sl.einsum("ij,jk->ik", a, b), [SMALL, SMALL_RHS]),
    "einsum_summed_inside": (lambda a, b: sl.einsum("ij,k->jk", a, b), [SMALL, RNG.normal(size=3)]),
    "einsum_ellipsis_broadcast": (
        lambda a, b: sl.einsum("...ij,...j->...i", a, b),
        [RNG.normal(size=(2, 2, 2)), RNG.normal(size=(1, 2))],
    ),
    "tensordot": (
        lambda a, b: sl.tensordot(a, b, [[0], [1]]),
        [RNG.normal(size=(2, 3)), RNG.normal(size=(1, 2))],
    ),
    "cross": (sl.cross, [RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3))]),
}


@pytest.fixture(scope="module")
def gradient_results():
    return gradient_table_runner(GRADIENTS)


@pytest.mark.parametrize("engine", VALUE_ENGINES)
@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_gradients_match_central_differences(gradient_results, name, engine):
    check_gradient_case(gradient_results(engine)[name])


@pytest.mark.parametrize("engine", ENGINES)
def test_determinant_gradient_is_cofactor_matrix(engine):
    """d det(A) / dA = det(A) A^-T, checked in closed form in both engines."""
    a = sl.constant(SMALL)
    (grad,) = gradients(sl.matrix_determinant(a), [a])
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        _close(sess.run(grad), np.linalg.det(SMALL) * np.linalg.inv(SMALL).T)


def test_svd_gradient_with_full_matrices_is_not_implemented():
    x = sl.constant(TALL)
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        gradients(sl.reduce_sum(sl.svd(x, full_matrices=True)[1]), [x])
